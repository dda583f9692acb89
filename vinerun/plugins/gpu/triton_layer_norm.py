"""LayerNorm of ``x + residual`` over the last axis as one Triton kernel: one program per row loads both rows,
adds them, computes the mean and variance in f32 registers and writes the normalized row once.

The kernel is defined on first use (Triton ships with PyTorch's CUDA builds; without it, :func:`launcher` gives
None and the caller composes PyTorch's ops).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

#: the widest row one program holds in registers (wider rows use PyTorch's layer_norm)
MAX_ROW = 16384


@functools.cache
def _kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def residual_layer_norm(X, R, W, B, Y, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64) * N
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(X + row + cols, mask=mask, other=0.0).to(tl.float32)
        x += tl.load(R + row + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / N
        d = tl.where(mask, x - mean, 0.0)
        var = tl.sum(d * d, axis=0) / N
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
        y = d / tl.sqrt_rn(var + eps) * w + b
        tl.store(Y + row + cols, y.to(Y.dtype.element_ty), mask=mask)

    return residual_layer_norm, triton.next_power_of_2


def launcher(n: int) -> Callable[..., None] | None:
    """``launch(x, residual, gamma, beta, y, eps)`` over rows of ``n`` contiguous elements, or None without Triton
    or for rows wider than :data:`MAX_ROW`."""
    if n > MAX_ROW:
        return None
    try:
        kernel, next_power_of_2 = _kernel()
    except ImportError:
        return None
    block = next_power_of_2(n)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16

    def launch(x: Any, residual: Any, gamma: Any, beta: Any, y: Any, eps: float) -> None:
        kernel[(x.numel() // n,)](x, residual, gamma, beta, y, n, eps, BLOCK=block, num_warps=warps)

    return launch
