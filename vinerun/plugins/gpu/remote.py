"""The GPU's remote context and tensors (OpenVINO's ``RemoteContext`` / ``RemoteTensor``), over PyTorch memory.

A :class:`GpuRemoteTensor` holds a torch tensor on the device. It goes into a request as it is (no host copy),
and a request whose inputs were device tensors returns its outputs as remote tensors. Any DLPack consumer takes
one without a copy (``torch.from_dlpack(t)``, ``cupy.from_dlpack(t)``); ``__cuda_array_interface__`` too on CUDA.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.errors import InputError
from vinerun.ir.shape import Shape
from vinerun.ir.tensor import Tensor, tensor_memory
from vinerun.ir.types import Type
from vinerun.plugin_api.remote import RemoteContext, RemoteTensor
from vinerun.plugins.gpu.backend import GpuDevice
from vinerun.plugins.gpu.kernels import TORCH_DTYPES, to_device, to_host

_TYPE_OF_DTYPE = {v: k for k, v in TORCH_DTYPES.items()}


def element_type_of(t: torch.Tensor) -> Type:
    name = _TYPE_OF_DTYPE.get(t.dtype)
    if name is None:
        raise InputError(f"GPU tensors of {t.dtype} are not supported; types: {sorted(TORCH_DTYPES)}")
    return Type(name)


class GpuRemoteTensor(RemoteTensor):
    """A tensor in GPU memory: ``get_shape``, ``get_element_type``, ``copy_to`` / ``copy_from`` a host tensor,
    ``get_params`` (the memory handle), DLPack and ``__cuda_array_interface__``."""

    def __init__(self, tensor: torch.Tensor, device_name: str):
        self._t = tensor
        self._device_name = device_name

    @property
    def torch(self) -> torch.Tensor:
        """The torch tensor itself (shared)."""
        return self._t

    def get_device_name(self) -> str:
        return self._device_name

    def get_params(self) -> dict[str, Any]:
        kind = self._t.device.type
        return {"SHARED_MEM_TYPE": "USM_DEVICE_BUFFER" if kind == "xpu" else "CUDA_BUFFER" if kind == "cuda"
                else "HOST_BUFFER", "MEM_HANDLE": self._t.data_ptr(), "DEVICE_ID": self._t.device.index or 0}

    def get_shape(self) -> Shape:
        return Shape(list(self._t.shape))

    @property
    def shape(self) -> Shape:
        return self.get_shape()

    def get_element_type(self) -> Type:
        return element_type_of(self._t)

    @property
    def element_type(self) -> Type:
        return self.get_element_type()

    def get_size(self) -> int:
        return self._t.numel()

    def get_byte_size(self) -> int:
        return self._t.numel() * self._t.element_size()

    @property
    def data(self) -> Any:
        raise InputError("A RemoteTensor's data lives on the GPU: copy it to a host Tensor (copy_to) or take it "
                         "with torch.from_dlpack(tensor)")

    def copy_to(self, target: Tensor | RemoteTensor) -> None:
        if isinstance(target, GpuRemoteTensor):
            target._t.copy_(self._t)
            return
        np.copyto(tensor_memory(target), to_host(self._t).reshape(tensor_memory(target).shape))

    def copy_from(self, source: Any) -> None:
        if isinstance(source, GpuRemoteTensor):
            self._t.copy_(source._t)
            return
        arr = source.data if isinstance(source, Tensor) else np.asarray(source)
        if tuple(arr.shape) != tuple(self._t.shape):
            raise InputError(f"copy_from: shape {list(arr.shape)} does not match the remote tensor's "
                             f"{list(self._t.shape)}")
        self._t.copy_(to_device(arr, self._t.device))

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._t.__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._t.device.type != "cuda":
            raise AttributeError("__cuda_array_interface__: the tensor is not in CUDA memory")
        return self._t.__cuda_array_interface__

    def __repr__(self) -> str:
        return (f"<RemoteTensor: {self._device_name} {self.get_element_type().get_type_name()} "
                f"{list(self._t.shape)}>")


class GpuContext(RemoteContext):
    """A GPU's memory context: ``create_tensor`` (device memory), ``create_host_tensor`` (pinned host memory)."""

    def __init__(self, device: GpuDevice, device_name: str):
        self.device, self.device_name = device, device_name

    def get_device_name(self) -> str:
        return self.device_name

    def get_params(self) -> dict[str, Any]:
        kind = {"cuda": "CUDA", "xpu": "L0"}.get(self.device.kind, "HOST")
        return {"CONTEXT_TYPE": kind, "DEVICE_ID": self.device.index, "GPU_DEVICE_ID": self.device.index}

    def create_tensor(self, type: Any, shape: Any, properties: dict[str, Any] | None = None) -> GpuRemoteTensor:  # noqa: A002
        et = type if isinstance(type, Type) else Type(type)
        dtype = TORCH_DTYPES.get(et.get_type_name())
        if dtype is None:
            raise InputError(f"GPU remote tensors of {et.get_type_name()} are not supported; types: "
                             f"{sorted(TORCH_DTYPES)}")
        dims = [int(d) for d in (shape.to_shape() if hasattr(shape, "to_shape") else shape)]
        return GpuRemoteTensor(torch.empty(dims, dtype=dtype, device=self.device.torch_device), self.device_name)

    def create_host_tensor(self, type: Any, shape: Any) -> Tensor:  # noqa: A002
        """A host Tensor in pinned (page-locked) memory: uploads from it are asynchronous and fastest."""
        et = type if isinstance(type, Type) else Type(type)
        dims = [int(d) for d in (shape.to_shape() if hasattr(shape, "to_shape") else shape)]
        dtype = TORCH_DTYPES.get(et.get_type_name())
        if dtype is None or et == Type.bf16:
            return Tensor(et, dims)
        pinned = torch.empty(dims, dtype=dtype, pin_memory=self.device.kind != "cpu")
        return Tensor(pinned.numpy(), shared_memory=True)  # the array keeps the pinned tensor alive
