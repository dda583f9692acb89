"""The GPU plugin: devices from PyTorch (CUDA, XPU), properties, ``query_model``, ``compile_model``, remote
contexts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vinerun.errors import DeviceError
from vinerun.ir.model import Model
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugin_api.property_table import PropertyTable, PropertyValues
from vinerun.plugins.gpu import backend, device_info
from vinerun.plugins.gpu.compiled_model import GPUCompiledModel
from vinerun.plugins.gpu.config import ALIASES, PLUGIN_TABLE
from vinerun.plugins.gpu.kernels import has_device_kernel
from vinerun.plugins.gpu.remote import GpuContext
from vinerun.properties import device as device_props

#: ops the GPU plugin runs on the host inside its plan, as OpenVINO's GPU plugin does (CPU-executed layers)
HOST_LAYERS = frozenset({"Proposal", "NonMaxSuppression", "PriorBox", "PriorBoxClustered", "DetectionOutput",
                         "ExperimentalDetectronDetectionOutput", "ExperimentalDetectronROIFeatureExtractor"})


#: device facts, answered for the device ``DEVICE_ID`` names
_DEVICE_FACTS: dict[str, Callable[[backend.GpuDevice], Any]] = {
    "FULL_DEVICE_NAME": device_info.full_name, "DEVICE_ARCHITECTURE": device_info.architecture,
    "DEVICE_UUID": device_info.device_uuid, "GPU_DEVICE_TOTAL_MEM_SIZE": device_info.total_memory,
    "GPU_EXECUTION_UNITS_COUNT": device_info.execution_units,
    "OPTIMIZATION_CAPABILITIES": device_info.capabilities,
    "GPU_MEMORY_STATISTICS": device_info.memory_statistics,
    "DEVICE_TYPE": lambda d: device_props.Type.INTEGRATED if device_info.integrated(d) else device_props.Type.DISCRETE,
    "RANGE_FOR_ASYNC_INFER_REQUESTS": lambda d: (1, 2, 1),
    "RANGE_FOR_STREAMS": lambda d: (1, 2),
    "EXECUTION_DEVICES": lambda d: [f"GPU.{d.index}"],
    "OPTIMAL_BATCH_SIZE": lambda d: 1,
    "MAX_BATCH_SIZE": lambda d: 1,
    "DEVICE_GOPS": lambda d: {},
}


def _renamed(config: dict[str, Any]) -> dict[str, Any]:
    """Legacy GPU key names (``GPU_THROUGHPUT_STREAMS``, ``GPU_PLUGIN_PRIORITY``, ...) as their current ones."""
    return {ALIASES.get(str(k), str(k)): v for k, v in config.items()}


class GPUPlugin(IPlugin):
    """The ``GPU`` device: ``GPU`` is ``GPU.0``; ``GPU.1``... when PyTorch sees several GPUs."""

    device_name = "GPU"

    def property_table(self) -> PropertyTable:
        return PLUGIN_TABLE

    def _device(self, config: dict[str, Any] | PropertyValues | None = None) -> backend.GpuDevice:
        device_id = None
        if isinstance(config, PropertyValues):
            device_id = config.get("DEVICE_ID")
        elif config:
            device_id = config.get("DEVICE_ID")
        if not backend.devices():
            listed = ", ".join(self.core.available_devices) if self.core is not None else "CPU"
            raise DeviceError("GPU is not available on this machine: PyTorch has no CUDA or XPU device "
                              f"(torch.cuda.is_available() is False). Available devices: {listed}")
        return backend.device_for(device_id if device_id is not None else self.props.get("DEVICE_ID"))

    def compile_config(self, config: dict[str, Any]) -> PropertyValues:
        return super().compile_config(_renamed(config))

    def set_property(self, config: dict[str, Any]) -> None:
        super().set_property(_renamed(config))

    def read_property(self, key: str) -> Any:
        key = ALIASES.get(key, key)
        if key == "AVAILABLE_DEVICES":
            return device_info.available_ids()
        if key in _DEVICE_FACTS:
            return _DEVICE_FACTS[key](self._device())
        return super().read_property(key)

    def get_property(self, key: str, options: dict[str, Any] | None = None) -> Any:
        """A property; ``OPTIMAL_BATCH_SIZE`` / ``MAX_BATCH_SIZE`` with ``options={"MODEL_PTR": model}`` are
        computed for that model (see :mod:`.batch_size`)."""
        key = ALIASES.get(str(key), str(key))
        if key in ("OPTIMAL_BATCH_SIZE", "MAX_BATCH_SIZE") and options and options.get("MODEL_PTR") is not None:
            from vinerun.plugins.gpu.batch_size import max_batch_size, optimal_batch_size

            model = options["MODEL_PTR"]
            model = getattr(model, "_model", model)
            fn = optimal_batch_size if key == "OPTIMAL_BATCH_SIZE" else max_batch_size
            return fn(model, self._device(options))
        return self.read_property(key)

    def compile_model(self, model: Model, config: dict[str, Any]) -> GPUCompiledModel:
        values = self.compile_config(config)
        device = self._device(values)
        name = "GPU" if len(backend.devices()) == 1 else f"GPU.{device.index}"
        return GPUCompiledModel(model, values, device, name)

    def import_model(self, model: Model, config: dict[str, Any]) -> GPUCompiledModel:
        """A blob stores the graph as compiled; the GPU rebuilds its plan from it (weights uploaded again)."""
        return self.compile_model(model, config)

    def caching_properties(self) -> list[str]:
        return sorted({*super().caching_properties(), "FULL_DEVICE_NAME"})

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        """The nodes the GPU runs: those with a device kernel, and the layers it executes on the host by design
        (:data:`HOST_LAYERS`); other nodes (their NumPy reference on the host) are left to another device."""
        device = self._device(self.compile_config(config)).torch_device
        return {n.friendly_name: "GPU" for n in model.get_ordered_ops()
                if n.type_name in ("Parameter", "Constant", "Result") or n.type_name in HOST_LAYERS
                or has_device_kernel(n, device)}

    def get_default_context(self) -> GpuContext:
        device = self._device()
        return GpuContext(device, "GPU" if device.index == 0 else f"GPU.{device.index}")

    def create_context(self, properties: dict[str, Any]) -> GpuContext:
        """A context on the device ``properties`` names (``DEVICE_ID`` / ``GPU_DEVICE_ID``, default GPU.0)."""
        index = properties.get("GPU_DEVICE_ID", properties.get("DEVICE_ID", 0))
        self._device()  # no GPU: the error names the devices there are
        device = backend.device_for(str(index))
        return GpuContext(device, f"GPU.{device.index}" if device.index else "GPU")
