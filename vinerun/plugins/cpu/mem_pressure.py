"""How much a model's heavy layers press on memory bandwidth, and so how many threads a THROUGHPUT stream should
have (OpenVINO's "memory bandwidth pressure" heuristic, recomputed here from its published rules).

Each MatMul, 1x1 (or 1-D) Convolution and ConvolutionBackpropData is scored by ``L2 per core / bytes it moves``
(its data input and output, and a MatMul's second input when that is not a constant): below 1 the layer's working
set spills from the core's L2. Convolutions with kernels of 3x3 and more count as compute-bound. The model's score
is its worst layer's. Then, for THROUGHPUT:

- every layer compute-bound, or the worst score above ``LIMITED / isa`` (0.5 over 1 for AVX2 / AVX-512, 2 with
  VNNI, 4 with AMX): 1 thread per stream (2 where each core has two hardware threads in use);
- the worst score above ``LIMITED``: 2 threads per stream;
- otherwise no preference (0): 4, 5 or 3 threads per stream, whichever divides the cores (all of them if none).

Recurrent sequences (GRUSequence, TensorIterator) give no score: no preference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vinerun.ir.model import Model
from vinerun.ir.node import Node

#: a layer scoring below this is taken to be limited by memory bandwidth
LIMITED = 0.5
UNKNOWN = math.inf
_RECURRENT = frozenset({"GRUSequence", "TensorIterator"})


@dataclass(frozen=True)
class MemPressure:
    """The worst layer's score (``UNKNOWN`` when no layer was scored) and the share of compute-bound convolutions
    (1.0: all of them; also 1.0 for deconvolutions of 5-D int8 data)."""

    worst: float = UNKNOWN
    compute_convs: float = 0.0
    compute_deconvs: float = 0.0


def _bytes_per_element(node: Node) -> int:
    name = node.get_input_element_type(1).get_type_name()
    return 1 if name in ("i8", "u8") else 2 if name in ("f16", "bf16") else 4


def _size(shape: object) -> int | None:
    return math.prod(shape.to_shape()) if shape.is_static else None  # type: ignore[attr-defined]


def _constant_path(node: Node) -> bool:
    """Whether ``node`` is a Constant, possibly behind Converts (a decompressed weight)."""
    while node.type_name == "Convert":
        node = node.input_value(0).node
    return node.type_name == "Constant"


def mem_pressure(model: Model, l2_bytes: float) -> MemPressure:
    """The model's :class:`MemPressure` for a core with ``l2_bytes`` of L2 cache."""
    worst = UNKNOWN
    convs = compute_convs = deconvs = compute_deconvs = 0
    for node in model.get_ordered_ops():
        kind = node.type_name
        if kind in _RECURRENT:
            return MemPressure()
        if kind not in ("MatMul", "Convolution", "ConvolutionBackpropData"):
            continue
        width = _bytes_per_element(node)
        data, out = _size(node.get_input_partial_shape(0)), _size(node.get_output_partial_shape(0))
        if kind == "MatMul":
            other = _size(node.get_input_partial_shape(1))
            if data is None or out is None or other is None:
                continue
            moved = data + out + (0 if _constant_path(node.input_value(1).node) else other)
        else:
            convs += kind == "Convolution"
            deconvs += kind != "Convolution"
            kernel = node.get_input_partial_shape(1)
            if kind == "Convolution" and kernel.is_static and len(kernel) >= 4 and \
                    min(kernel.to_shape()[2:4]) >= 3:
                compute_convs += 1
                continue
            if data is None or out is None:
                continue
            if len(node.get_input_partial_shape(0)) > 4 and width == 1:
                compute_convs += kind == "Convolution"
                compute_deconvs += kind != "Convolution"
                continue
            moved = data + out
        worst = min(worst, l2_bytes / max(moved * width, 1))
    return MemPressure(worst, compute_convs / convs if convs else 0.0,
                       compute_deconvs / deconvs if deconvs else 0.0)


def isa_multiplier(flags: frozenset[str]) -> float:
    """How much more a core computes per byte with its best ISA (AMX 4, AVX-512 VNNI 2, AVX2 / AVX-512 1)."""
    if "amx_bf16" in flags or "amx_int8" in flags:
        return 4.0
    if "avx512_vnni" in flags or "avx_vnni" in flags:
        return 2.0
    if "avx2" in flags or "avx512f" in flags:
        return 1.0
    return 0.5


def preferred_threads(pressure: MemPressure, isa: float, smt_pairs: bool = False) -> int:
    """Threads per THROUGHPUT stream the pressure calls for (0: no preference); ``smt_pairs``: every core's two
    hardware threads are in use, so a stream takes a core's pair."""
    prefer = 0
    if pressure.worst == UNKNOWN:
        if pressure.compute_convs == 1.0 or pressure.compute_deconvs == 1.0:
            prefer = 1
    elif pressure.worst > LIMITED / isa:
        prefer = 1
    elif pressure.worst > LIMITED:
        prefer = 2
    return 2 if prefer == 1 and smt_pairs else prefer


def default_threads_per_stream(cpus: int) -> int:
    """Threads per stream without a preference: 4, 5 or 3, whichever divides ``cpus`` first, else all of them."""
    return next((n for n in (4, 5, 3) if cpus % n == 0), cpus)
