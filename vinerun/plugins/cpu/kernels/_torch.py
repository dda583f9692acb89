"""NumPy <-> torch conversions without copies where possible (bf16 via a bit view), and the element-type
checks kernel factories share."""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np
import torch

from vinerun.ir.node import Node

_BF16 = np.dtype(ml_dtypes.bfloat16)
BF16 = _BF16  #: NumPy's bfloat16 (ml_dtypes)
# dtypes torch computes with natively; others fall back to the reference
TORCH_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16,
                                      np.int32, np.int64, np.bool_)} | {_BF16}
# element types (vinerun names) of the float kernels
FLOAT_TYPES = ("f32", "f16", "bf16", "f64")


def torch_ok(*arrays: Any) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype in TORCH_DTYPES for a in arrays)


def to_torch(a: np.ndarray) -> torch.Tensor:
    """A C-contiguous tensor sharing ``a``'s memory where it is writable and contiguous, else a copy."""
    bf16 = a.dtype == _BF16
    if bf16:
        a = a.view(np.int16)  # NumPy copies its own int16 faster than ml_dtypes' bfloat16
    if not a.flags.writeable or not a.flags.c_contiguous:
        # torch needs writable, contiguous memory; np.ascontiguousarray would make 0-d arrays 1-d
        a = np.array(a, copy=True, order="C")
    return torch.from_numpy(a).view(torch.bfloat16) if bf16 else torch.from_numpy(a)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(_BF16)
    return t.numpy()


def strided_numpy(t: torch.Tensor) -> np.ndarray:
    """``t`` as an array with its strides (a channels-last tensor stays so), bf16 included, without a copy."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(_BF16)
    return t.numpy()


def strided_view(a: np.ndarray) -> torch.Tensor | None:
    """A zero-copy tensor with ``a``'s strides (a torch dtype, writable, non-negative strides), else None."""
    if not a.flags.writeable or a.dtype not in TORCH_DTYPES or any(s < 0 for s in a.strides):
        return None
    if a.dtype == _BF16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


@functools.cache
def mkldnn_bf16() -> bool:
    """Whether ATen's oneDNN ops take bf16 on this CPU (AVX-512 or newer; they raise on others)."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def float_inputs(node: Node, *indices: int) -> bool:
    """Each of the inputs ``indices`` has a float element type."""
    return all(node.get_input_element_type(i).get_type_name() in FLOAT_TYPES for i in indices)


def float_node(node: Node, inputs: int = 2) -> bool:
    """All of the first ``inputs`` inputs share one float element type."""
    names = {node.get_input_element_type(i).get_type_name() for i in range(inputs)}
    return len(names) == 1 and names.pop() in FLOAT_TYPES


def static_rank(node: Node, i: int = 0) -> int | None:
    """The rank of input ``i`` when static, else None."""
    rank = node.get_input_partial_shape(i).rank
    return rank.get_length() if rank.is_static else None


def widened(t: torch.Tensor) -> torch.Tensor:
    """f16 and bf16 as f32 (statistics and transcendental math lose too much in them); others as they are."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
