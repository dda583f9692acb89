"""CPU compiled model and its infer request."""

from __future__ import annotations

from typing import Any

from vinerun.errors import PropertyError
from vinerun.ir.interpreter import state_scope
from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugins.cpu.plan import Plan

_RO = ("SUPPORTED_PROPERTIES", "NETWORK_NAME", "OPTIMAL_NUMBER_OF_INFER_REQUESTS", "EXECUTION_DEVICES",
       "PERF_COUNT", "INFERENCE_PRECISION_HINT", "PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS")


class CPUCompiledModel(ICompiledModel):
    """A model compiled into a :class:`Plan` of CPU kernels."""

    def __init__(self, model: Model, config: dict[str, Any]):
        super().__init__(model.clone(), "CPU")
        self.config = dict(config)
        self.plan = Plan(self.model)

    def create_sync_infer_request(self) -> CPUInferRequest:
        return CPUInferRequest(self)

    def get_property(self, key: str) -> Any:
        values = {
            "SUPPORTED_PROPERTIES": {k: "RO" for k in _RO},
            "NETWORK_NAME": self.model.friendly_name,
            "OPTIMAL_NUMBER_OF_INFER_REQUESTS": 1,
            "EXECUTION_DEVICES": ["CPU"],
            "PERF_COUNT": bool(self.config.get("PERF_COUNT", False)),
            "INFERENCE_PRECISION_HINT": self.config.get("INFERENCE_PRECISION_HINT", "f32"),
            "PERFORMANCE_HINT": self.config.get("PERFORMANCE_HINT", "LATENCY"),
            "NUM_STREAMS": int(self.config.get("NUM_STREAMS", 1)),
            "INFERENCE_NUM_THREADS": int(self.config.get("INFERENCE_NUM_THREADS", 0)),
        }
        if key not in values:
            raise PropertyError(f"Unsupported property {key} by CPU compiled model. Supported: {', '.join(_RO)}")
        return values[key]


class CPUInferRequest(ISyncInferRequest):
    """Runs the plan; keeps variable state and the last profile."""

    def __init__(self, compiled: CPUCompiledModel):
        self.compiled = compiled
        self.state: dict[str, Any] = {}
        self._profile: list[ProfilingInfo] = []

    def infer(self, inputs: list[Any]) -> list[Any]:
        profile: list[ProfilingInfo] | None = [] if self.compiled.config.get("PERF_COUNT") else None
        with state_scope(self.state):
            outs = self.compiled.plan.run(inputs, profile)
        if profile is not None:
            self._profile = profile
        return outs

    def get_profiling_info(self) -> list[ProfilingInfo]:
        return list(self._profile)
