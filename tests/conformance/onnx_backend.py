"""An ``onnx.backend.base.Backend`` that runs models through vinerun's public API on a device."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

import vinerun as ov


class VinerunRep(BackendRep):
    """A compiled model, run as the ONNX test runner expects (outputs in graph order)."""

    def __init__(self, compiled: ov.CompiledModel):
        self.compiled = compiled
        self.request = compiled.create_infer_request()

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, dict):
            feed = inputs
        else:
            feed = {i: v for i, v in enumerate(inputs)}
        result = self.request.infer(feed)
        return tuple(result.to_tuple())


class VinerunBackend(Backend):
    device = "CPU"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> VinerunRep:
        core = ov.Core()
        m = core.read_model(model.SerializeToString())
        # the ONNX node tests check f32 semantics: no bf16 lowering on CPUs that have it natively
        return VinerunRep(core.compile_model(m, cls.device, {"INFERENCE_PRECISION_HINT": "f32"}))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> Any:
        return cls.prepare(model, device).run(inputs)


def as_float(x: Any) -> Any:
    return np.asarray(x, dtype=np.float32)
