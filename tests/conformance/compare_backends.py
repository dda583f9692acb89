"""Count ONNX backend node tests (CPU cases) passed by vinerun, onnxruntime and openvino.

Every backend runs through the same onnx ``BackendTest`` harness, in one process run:

    python -m tests.conformance.compare_backends                 # all three
    python -m tests.conformance.compare_backends vinerun          # just one

No expected-failure list is applied here: this is the raw count.
"""

from __future__ import annotations

import sys
import unittest
import warnings
from typing import Any

import numpy as np
import onnx
import onnx.backend.test
from onnx.backend.base import Backend, BackendRep

from tests.conformance.onnx_backend import VinerunBackend


class _Rep(BackendRep):
    def __init__(self, run: Any):
        self._run = run

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        return tuple(self._run(list(inputs) if not isinstance(inputs, dict) else inputs))


class OnnxRuntimeBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> _Rep:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return _Rep(lambda xs: session.run(None, xs if isinstance(xs, dict) else dict(zip(names, xs, strict=False))))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


class OpenVinoBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> _Rep:
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(core.read_model(model.SerializeToString()), "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()

        def run(xs: Any) -> list[Any]:
            feed = xs if isinstance(xs, dict) else dict(enumerate(xs))
            result = request.infer(feed)
            return [np.asarray(v) for v in result.to_tuple()]

        return _Rep(run)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


BACKENDS = {"vinerun": VinerunBackend, "onnxruntime": OnnxRuntimeBackend, "openvino": OpenVinoBackend}


def count(name: str) -> tuple[int, int]:
    """(passed, total) of the CPU node tests for one backend."""
    bt = onnx.backend.test.BackendTest(BACKENDS[name], f"compare_{name}")
    cls = bt.test_cases["OnnxBackendNodeModelTest"]
    suite = unittest.TestSuite(cls(m) for m in sorted(dir(cls)) if m.startswith("test_") and m.endswith("_cpu"))
    result = unittest.TestResult()
    suite.run(result)
    total = suite.countTestCases()
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    return total - failed - len(result.skipped), total


def main(argv: list[str]) -> int:
    warnings.filterwarnings("ignore")
    names = argv or list(BACKENDS)
    for name in names:
        passed, total = count(name)
        print(f"{name:12s} {passed:5d} / {total} passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
