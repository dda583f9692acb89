"""GPU kernels: per op type, a factory that turns a node into a callable on device tensors.

A factory ``factory(node, device) -> GpuKernel | None`` returns ``None`` when it cannot handle a node (an element
type or attribute it does not cover); the node then runs on the host (its NumPy reference, exec type
``host_ref``: inputs copied to host, outputs back), as OpenVINO's GPU plugin runs some layers on the CPU.
Modules in this package are imported automatically and register with ``@gpu_kernel``.

Values in a GPU plan are torch tensors on the plan's device; element types PyTorch has no tensor type for
(strings, u16 / u32 / u64, sub-byte types) stay NumPy arrays on the host and only host kernels read them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import torch

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node
from vinerun.plugin_api.kernel_registry import KernelRegistry

KernelFn = Callable[[list[Any]], list[Any]]

#: vinerun element type name -> the torch dtype a device tensor of it has
TORCH_DTYPES: dict[str, torch.dtype] = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
    "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
    "boolean": torch.bool,
}
_NUMPY_OF_TORCH = {torch.float32: np.float32, torch.float16: np.float16, torch.float64: np.float64,
                   torch.int8: np.int8, torch.uint8: np.uint8, torch.int16: np.int16, torch.int32: np.int32,
                   torch.int64: np.int64, torch.bool: np.bool_}
_BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_TYPES = ("f32", "f16", "bf16", "f64")


@dataclass
class GpuKernel:
    """A compiled node: ``fn(inputs) -> outputs`` on device tensors, and the name profiling reports.

    ``host``: the kernel reads values on the host (a copy and a synchronization): it cannot be captured in a CUDA
    graph, so a plan with one runs without graphs (see :mod:`..plan`).
    """

    fn: KernelFn
    exec_type: str
    host: bool = False
    #: the output is a view of input 0 (Reshape, Squeeze, ...): profiling reports the node OPTIMIZED_OUT, as
    #: OpenVINO's GPU plugin does for layers it optimizes out
    view: bool = False


Factory = Callable[[Node, torch.device], GpuKernel | None]
_REGISTRY = KernelRegistry(__name__, __path__)
#: ``@gpu_kernel("Relu", ...)``: register a kernel factory for the given op type names
gpu_kernel = _REGISTRY.kernel


def to_device(value: Any, device: torch.device) -> Any:
    """A host array as a device tensor (bf16 via its bits); a type PyTorch lacks stays a host array; ONNX sequences
    (lists) and absent optional values (None) stay on the host as they are."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if value is None or isinstance(value, (list, tuple)):
        return value
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if value.dtype == _BF16:
        # np.array, not np.ascontiguousarray: that makes a 0-d array 1-d
        return torch.from_numpy(np.array(value, copy=True, order="C").view(np.int16)).to(device).view(torch.bfloat16)
    if value.dtype.type not in _NUMPY_OF_TORCH.values():
        return value
    return torch.from_numpy(np.array(value, copy=True, order="C")).to(device)


def to_host(value: Any) -> Any:
    """A device tensor as a host array (bf16 as ml_dtypes' bfloat16); host values as they are."""
    if not isinstance(value, torch.Tensor):
        return value
    t = value.detach()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).cpu().numpy().view(_BF16)
    return t.cpu().numpy()


def constant_input(node: Node, i: int) -> np.ndarray | None:
    """The value of input ``i`` when it is a Constant (shape / axes operands are, in a folded graph)."""
    if i >= node.get_input_size() or node.input_value(i) is None:
        return None
    src = node.input_value(i).node
    return src.get_value() if isinstance(src, Constant) else None


def input_type(node: Node, i: int) -> str:
    return node.get_input_element_type(i).get_type_name()


def output_type(node: Node, i: int = 0) -> str:
    return node.get_output_element_type(i).get_type_name()


def torch_types(node: Node) -> bool:
    """Every input and output has a type device tensors hold."""
    ins = [input_type(node, i) for i in range(node.get_input_size()) if node.input_value(i) is not None]
    outs = [output_type(node, i) for i in range(node.get_output_size())]
    return all(t in TORCH_DTYPES for t in ins + outs)


def host_kernel(node: Node, device: torch.device) -> GpuKernel:
    """The node's NumPy reference on the host: inputs copied to host, outputs back to the device."""

    def run(inputs: list[Any]) -> list[Any]:
        outs = node.evaluate([None if v is None else to_host(v) for v in inputs])
        return [to_device(o, device) for o in outs]

    return GpuKernel(run, "host_ref", host=True)


def select_kernel(node: Node, device: torch.device) -> GpuKernel:
    """The first registered kernel that accepts ``node``, else the host reference."""
    for factory in _REGISTRY.for_type(node.type_name):
        kernel = factory(node, device)
        if kernel is not None:
            return kernel
    return host_kernel(node, device)


def has_device_kernel(node: Node, device: torch.device) -> bool:
    """Whether a device kernel (not the host reference) takes ``node`` (``query_model``'s answer)."""
    return any(f(node, device) is not None for f in _REGISTRY.for_type(node.type_name))
