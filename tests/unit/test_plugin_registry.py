"""A third-party device is found through the plugin registry, never imported by the runtime.

The test device here runs models with the NumPy reference interpreter; it exists only in tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import DeviceError
from vinerun.ir.interpreter import run_reference
from vinerun.plugin_api import ICompiledModel, IPlugin, ISyncInferRequest
from vinerun.runtime import registry


class _RefRequest(ISyncInferRequest):
    def __init__(self, compiled: _RefCompiled):
        self.compiled = compiled

    def infer(self, inputs: list[Any]) -> list[Any]:
        self.compiled.runs += 1
        return run_reference(self.compiled.model, inputs)


class _RefCompiled(ICompiledModel):
    def __init__(self, model: ov.Model):
        super().__init__(model.clone(), "REFDEV")
        self.runs = 0

    def create_sync_infer_request(self) -> _RefRequest:
        return _RefRequest(self)

    def get_property(self, key: str) -> Any:
        return {"OPTIMAL_NUMBER_OF_INFER_REQUESTS": 1, "EXECUTION_DEVICES": ["REFDEV"]}[key]


class RefPlugin(IPlugin):
    """A test-only device: the reference interpreter behind the plugin API."""

    device_name = "REFDEV"

    def compile_model(self, model: ov.Model, config: dict[str, Any]) -> _RefCompiled:
        return _RefCompiled(model)

    def query_model(self, model: ov.Model, config: dict[str, Any]) -> dict[str, str]:
        return {n.friendly_name: "REFDEV" for n in model.get_ordered_ops()}


class _FakeEntryPoint:
    name = "refdev"

    def load(self) -> type:
        return RefPlugin


def _model() -> ov.Model:
    x = ops.parameter([2, 2], ov.Type.f32, name="x")
    return ov.Model([ops.sigmoid(x)], [x], "sig")


def _check_runs_on(core: ov.Core, device: str) -> None:
    compiled = core.compile_model(_model(), device)
    x = np.array([[0, 1], [-1, 2]], np.float32)
    np.testing.assert_allclose(compiled({"x": x})[0], 1 / (1 + np.exp(-x)), rtol=1e-6)
    request = compiled.create_infer_request()
    request.start_async({"x": x})
    request.wait()
    np.testing.assert_allclose(request.get_output_tensor(0).data, 1 / (1 + np.exp(-x)), rtol=1e-6)
    assert compiled._impl.runs == 2


def test_entry_point_device_is_discovered(monkeypatch):
    fake = [_FakeEntryPoint()]
    monkeypatch.setattr(registry, "entry_points", lambda group: fake if group == "vinerun.plugins" else [])
    core = ov.Core()
    assert "REFDEV" in core.available_devices
    _check_runs_on(core, "REFDEV")


def test_register_plugin_by_class_or_import_string():
    core = ov.Core()
    core.register_plugin(RefPlugin, "REFDEV")
    _check_runs_on(core, "REFDEV")
    core.register_plugin(f"{__name__}:RefPlugin", "OTHER")
    assert core.query_model(_model(), "OTHER")


def test_unknown_device_lists_the_known_ones():
    with pytest.raises(DeviceError, match=r"NOPE.*Available devices: .*CPU"):
        ov.Core().compile_model(_model(), "NOPE")
