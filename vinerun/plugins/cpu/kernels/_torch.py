"""NumPy <-> torch conversions without copies where possible (bf16 via a bit view)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

_BF16 = np.dtype(ml_dtypes.bfloat16)
# dtypes torch computes with natively; others fall back to the reference
TORCH_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16,
                                      np.int32, np.int64, np.bool_)} | {_BF16}


def torch_ok(*arrays: Any) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype in TORCH_DTYPES for a in arrays)


def to_torch(a: np.ndarray) -> torch.Tensor:
    if not a.flags.writeable or not a.flags.c_contiguous:
        # torch needs writable, contiguous memory; np.ascontiguousarray would make 0-d arrays 1-d
        a = np.array(a, copy=True, order="C")
    if a.dtype == _BF16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(_BF16)
    return t.numpy()
