"""Generated Triton kernels for :class:`~.eltwise_chain.EltwiseChain` nodes.

One kernel per chain: each program loads a block of the running tensor (and of each full-size operand; a
scalar operand is one load), applies the steps in f32 registers and stores the result once. Transcendental
functions come from libdevice, and division and square root round as IEEE (``div_rn``, ``sqrt_rn``), as PyTorch
computes them. The source is written to a file (Triton compiles from source; ``GPU_DUMP_GRAPHS_PATH`` keeps it for
reading) and compiled on first launch; Triton's own cache (``TRITON_CACHE_DIR``, set under ``CACHE_DIR``) keeps
the binaries, so a second compile of the model does not compile again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import tempfile
from collections.abc import Callable
from typing import Any

from vinerun.ir.node import Node

BLOCK = 1024
_SQRT1_2 = 0.7071067811865476

# the running value is ``x``, the other operand ``o``; ``{p}`` marks ops whose operand order matters
_UNARY: dict[str, str] = {
    "Relu": "tl.maximum(x, 0.0)", "Sigmoid": "tl.sigmoid(x)", "Tanh": "libdevice.tanh(x)",
    "Exp": "tl.exp(x)", "Abs": "tl.abs(x)", "Sqrt": "tl.sqrt_rn(x)", "Negative": "-x",
    "HSwish": "x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0",
    "HSigmoid": "tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0",
    "Erf": "libdevice.erf(x)",
    # log(1 + e^x) without overflow, and without losing small values far below 0
    "SoftPlus": "tl.maximum(x, 0.0) + libdevice.log1p(tl.exp(-tl.abs(x)))",
}
_BINARY: dict[str, tuple[str, str]] = {  # (running value first, running value second)
    "Add": ("x + o", "o + x"), "Subtract": ("x - o", "o - x"), "Multiply": ("x * o", "o * x"),
    "Divide": ("tl.math.div_rn(x, o)", "tl.math.div_rn(o, x)"),  # IEEE division, as PyTorch's
    "Maximum": ("tl.maximum(x, o)", "tl.maximum(o, x)"),
    "Minimum": ("tl.minimum(x, o)", "tl.minimum(o, x)"), "SquaredDifference": ("(x - o) * (x - o)",) * 2,
    "PRelu": ("tl.where(x < 0.0, x * o, x)", ""),
}


def _expression(node: Node, position: int, has_operand: bool) -> str | None:
    """The Triton expression of one step, or None when the generator does not cover it."""
    t = node.type_name
    if t in _UNARY and not has_operand:
        return _UNARY[t]
    if t in _BINARY and has_operand:
        return _BINARY[t][position] or None
    attrs = node.get_attributes()
    if t == "Clamp":  # an infinite bound (a Maximum or Minimum read as a Clamp) is no bound: `inf` is no literal
        lo, hi, expr = float(attrs["min"]), float(attrs["max"]), "x"
        if math.isfinite(lo):
            expr = f"tl.maximum({expr}, {lo!r})"
        if math.isfinite(hi):
            expr = f"tl.minimum({expr}, {hi!r})"
        return expr
    if t == "Swish":
        return "x * tl.sigmoid(o * x)" if has_operand else "x * tl.sigmoid(x)"
    if t == "Elu":
        return f"tl.where(x > 0.0, x, {float(attrs['alpha'])!r} * (tl.exp(x) - 1.0))"
    if t == "Gelu":
        if str(attrs.get("approximation_mode", "ERF")).upper() == "TANH":
            return "0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))"
        return f"0.5 * x * (1.0 + libdevice.erf(x * {_SQRT1_2!r}))"
    return None


#: how a kernel reads an operand: one element, the running tensor's layout, or one value per channel
OPERAND_LOADS = {
    "scalar": "tl.load(O{k})",
    "full": "tl.load(O{k} + offs, mask=mask)",
    # a dense tensor's channel of flat index i is (i // INNER) % C: INNER is 1 channels-last, H*W for NCHW
    "channel": "tl.load(O{k} + (offs // INNER) % C, mask=mask)",
}


def generate(steps: list[tuple[Node, int, bool]], loads: list[str]) -> str | None:
    """The kernel source for ``steps`` ((node, position, has operand)); ``loads[k]``: how operand k is read (a key
    of :data:`OPERAND_LOADS`). None when a step is not covered."""
    body: list[str] = []
    k = 0
    for node, position, has_operand in steps:
        expr = _expression(node, position, has_operand)
        if expr is None:
            return None
        if has_operand:
            body.append(f"    o = {OPERAND_LOADS[loads[k]].format(k=k)}.to(tl.float32)")
            k += 1
        body.append(f"    x = {expr}")
    params = "".join(f"O{i}, " for i in range(k))
    return "\n".join([
        "import triton",
        "import triton.language as tl",
        "from triton.language.extra import libdevice",
        "",
        "",
        "@triton.jit",
        f"def chain_kernel(X, {params}Y, N, C, INNER, BLOCK: tl.constexpr):",
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < N",
        "    x = tl.load(X + offs, mask=mask).to(tl.float32)",
        *body,
        "    tl.store(Y + offs, x.to(Y.dtype.element_ty), mask=mask)",
        "",
    ])


_dir: str | None = None


def source_dir() -> str:
    """Where generated sources go: ``GPU_DUMP_GRAPHS_PATH`` when set (see :func:`set_dump_dir`), else a
    per-process temporary folder."""
    global _dir
    if _dir is None:
        _dir = tempfile.mkdtemp(prefix="vinerun_triton_")
    return _dir


def set_dump_dir(path: str) -> None:
    global _dir
    if path:
        os.makedirs(path, exist_ok=True)
        _dir = path


def set_cache_dir(cache_dir: str) -> None:
    """Triton's binaries under ``CACHE_DIR`` (a second compile of the model reuses them)."""
    if cache_dir and "TRITON_CACHE_DIR" not in os.environ:
        os.environ["TRITON_CACHE_DIR"] = os.path.join(cache_dir, "triton")


def load(source: str) -> Callable[..., Any]:
    """The ``chain_kernel`` of ``source``, imported from a file named by the source's hash."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(source_dir(), f"vinerun_chain_{digest}.py")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
    spec = importlib.util.spec_from_file_location(f"vinerun_chain_{digest}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.chain_kernel


#: launch parameters a tuner tries (the first is the default)
CANDIDATES = [{"BLOCK": b, "num_warps": w} for b in (BLOCK, 512, 2048, 4096) for w in (4, 8)]


def launcher(kernel: Callable[..., Any]) -> Callable[..., None]:
    """``launch(x, operands, y, params, channels=1, inner=1)``: one program per ``params["BLOCK"]`` elements of
    ``x`` (flat, dense tensors), ``params["num_warps"]`` warps each; ``channels`` and ``inner`` place the
    per-channel operands (see :data:`OPERAND_LOADS`)."""

    def launch(x: Any, operands: list[Any], y: Any, params: dict[str, int] = CANDIDATES[0],  # noqa: B006
               channels: int = 1, inner: int = 1) -> None:
        n, block = x.numel(), params["BLOCK"]
        kernel[((n + block - 1) // block,)](x, *operands, y, n, channels, inner, BLOCK=block,
                                           num_warps=params["num_warps"])

    return launch
