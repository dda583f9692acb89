"""The CPU plugin: properties, ``query_model`` and ``compile_model``."""

from __future__ import annotations

from typing import Any

from vinerun.errors import PropertyError
from vinerun.ir.model import Model
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugins.cpu import device_info
from vinerun.plugins.cpu.compiled_model import CPUCompiledModel

_PERF_HINTS = ("LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT")
_PRECISIONS = ("f32", "bf16", "f16")


class CPUPlugin(IPlugin):
    """The ``CPU`` device."""

    device_name = "CPU"

    def __init__(self) -> None:
        super().__init__()
        self.config = {
            "PERFORMANCE_HINT": "LATENCY",
            "NUM_STREAMS": 1,
            "INFERENCE_NUM_THREADS": 0,
            "PERF_COUNT": False,
            "INFERENCE_PRECISION_HINT": "f32",
            "EXECUTION_MODE_HINT": "PERFORMANCE",
            "PERFORMANCE_HINT_NUM_REQUESTS": 0,
            "LOG_LEVEL": "LOG_NONE",
            "CACHE_DIR": "",
        }

    def supported_properties(self) -> dict[str, str]:
        ro = ["SUPPORTED_PROPERTIES", "AVAILABLE_DEVICES", "RANGE_FOR_ASYNC_INFER_REQUESTS", "RANGE_FOR_STREAMS",
              "FULL_DEVICE_NAME", "OPTIMIZATION_CAPABILITIES", "DEVICE_TYPE", "DEVICE_ARCHITECTURE"]
        return {**{k: "RO" for k in ro}, **{k: "RW" for k in self.config}}

    def read_property(self, key: str) -> Any:
        fixed = {
            "AVAILABLE_DEVICES": [""],
            "RANGE_FOR_ASYNC_INFER_REQUESTS": (1, 1, 1),
            "RANGE_FOR_STREAMS": (1, device_info.core_count()),
            "FULL_DEVICE_NAME": device_info.cpu_name(),
            "OPTIMIZATION_CAPABILITIES": device_info.optimization_capabilities(),
            "DEVICE_TYPE": "integrated",
            "DEVICE_ARCHITECTURE": device_info.architecture(),
        }
        return fixed[key] if key in fixed else self.config[key]

    def check_property(self, key: str, value: Any) -> Any:
        if key == "PERFORMANCE_HINT":
            v = str(getattr(value, "name", value)).upper()
            if v not in _PERF_HINTS:
                raise PropertyError(f"Wrong value {value} for property key PERFORMANCE_HINT. "
                                    f"Expected one of: {', '.join(_PERF_HINTS)}")
            return v
        if key == "INFERENCE_PRECISION_HINT":
            v = str(getattr(value, "get_type_name", lambda: value)()).lower()
            if v not in _PRECISIONS:
                raise PropertyError(f"Wrong value {value} for property key INFERENCE_PRECISION_HINT. "
                                    f"Expected one of: {', '.join(_PRECISIONS)}")
            return v
        if key in ("NUM_STREAMS", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT_NUM_REQUESTS"):
            try:
                return int(value)
            except (TypeError, ValueError):
                raise PropertyError(f"Wrong value {value!r} for property key {key}: expected an integer") from None
        if key == "PERF_COUNT":
            if isinstance(value, str):
                if value.upper() not in ("YES", "NO", "TRUE", "FALSE"):
                    raise PropertyError(f"Wrong value {value!r} for property key PERF_COUNT: expected a boolean")
                return value.upper() in ("YES", "TRUE")
            return bool(value)
        return value

    def compile_model(self, model: Model, config: dict[str, Any]) -> CPUCompiledModel:
        merged = dict(self.config)
        supported = self.supported_properties()
        for k, v in config.items():
            if k not in supported:
                raise PropertyError(f"Unsupported property {k} by CPU plugin. Supported: {', '.join(sorted(supported))}")
            merged[k] = self.check_property(k, v)
        return CPUCompiledModel(model, merged)

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        return {n.friendly_name: "CPU" for n in model.get_ordered_ops()}
