"""``vinerun.compress_weights``: weight-only compression of MatMul and embedding (Gather) weights, written as
NNCF writes it for OpenVINO so both runtimes read the graph:

    W (u8|i8|u4|i4) -> Convert(f16) [-> Subtract(Convert(zero point))] -> Multiply(scale f16)
        [-> Reshape [out, in/group, group] -> [out, in]] -> Convert(f32) -> MatMul / Gather

INT8 modes keep one scale per output channel; INT4 modes one per ``group_size`` weights along the reduced axis.
In INT4 modes the embeddings and the last MatMul stay INT8_ASYM (NNCF's default), and ``ratio`` < 1 keeps the
layers with the largest 4-bit error in INT8_ASYM too.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 64], ov.Type.f32, name="x")
>>> w = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
>>> model = ov.Model([ov.opset1.matmul(x, w, False, False, name="fc")], [x])
>>> c = ov.compress_weights(model, mode=ov.CompressWeightsMode.INT8_SYM)
>>> sorted({str(n.get_element_type()) for n in c.get_ordered_ops() if n.type_name == "Constant"})
["<Type: 'float16'>", "<Type: 'int8_t'>"]
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from vinerun.ir import Model, Node, Output, Type
from vinerun.ir.core_ops import Constant
from vinerun.ops.arithmetic import Multiply, Subtract
from vinerun.ops.convert import Convert
from vinerun.ops.reshape import Reshape
from vinerun.quantization.graph import GraphInfo
from vinerun.quantization.parameters import CompressWeightsMode, IgnoredScope, QuantizationError

#: mode -> (storage dtype, low level, high level, symmetric)
_MODES = {
    CompressWeightsMode.INT8_SYM: (np.int8, -128, 127, True),
    CompressWeightsMode.INT8_ASYM: (np.uint8, 0, 255, False),
    CompressWeightsMode.INT4_SYM: (ml_dtypes.int4, -8, 7, True),
    CompressWeightsMode.INT4_ASYM: (ml_dtypes.uint4, 0, 15, False),
}


@dataclass
class WeightSite:
    """One compressible weight: the reader, its input, the reduced axis and the float value."""

    node: Node
    port: int
    axis: int
    value: np.ndarray

    @property
    def source(self) -> Output:
        return self.node.input_value(self.port)


@dataclass
class CompressedWeight:
    """Integer codes, scale and (asymmetric modes) zero point, all shaped for the decompression subgraph."""

    codes: np.ndarray
    scale: np.ndarray
    zero_point: np.ndarray | None
    grouped_shape: tuple[int, ...] | None


def compress_weights(model: Model, mode: CompressWeightsMode | str = CompressWeightsMode.INT8_ASYM,
                     ratio: float | None = None, group_size: int | None = None,
                     ignored_scope: IgnoredScope | None = None, all_layers: bool = False) -> Model:
    """A copy of ``model`` whose MatMul / embedding weights are stored compressed (see the module text).

    ``group_size``: INT4 modes only (default 128; -1: per channel). ``ratio``: the share of the weights (by
    count) in 4 bits, the rest INT8_ASYM. ``all_layers``: INT4 for the embeddings and the last layer too.
    """
    if not isinstance(model, Model):
        raise QuantizationError(f"compress_weights expects a vinerun Model, got {type(model).__name__}")
    try:
        mode = CompressWeightsMode(mode.value if hasattr(mode, "value") else mode)
    except ValueError:
        raise QuantizationError(f"mode: '{mode}' is not one of {[m.value for m in CompressWeightsMode]}") from None
    int4 = mode in (CompressWeightsMode.INT4_SYM, CompressWeightsMode.INT4_ASYM)
    if not int4 and group_size not in (None, -1):
        raise QuantizationError(f"group_size={group_size}: {mode.value} is per channel; group_size applies to "
                                "int4_sym / int4_asym")
    if int4 and group_size is not None and group_size != -1 and group_size < 2:
        raise QuantizationError(f"group_size must be -1 or at least 2, got {group_size}")
    ratio = 1.0 if ratio is None else float(ratio)
    if not 0.0 <= ratio <= 1.0:
        raise QuantizationError(f"ratio must be within [0, 1], got {ratio}")
    group = (128 if group_size is None else group_size) if int4 else -1
    ignored = ignored_scope or IgnoredScope()

    work = model.clone()
    info = GraphInfo(work)
    ignored.check({n.friendly_name for n in info.ops}, {n.type_name for n in info.ops})
    sites = [s for s in find_weight_sites(info) if not ignored.matches(s.node.friendly_name, s.node.type_name)]
    modes = {id(s): mode for s in sites}
    if int4:
        backup = CompressWeightsMode.INT8_ASYM
        body = [s for s in sites if s.node.type_name == "MatMul"]
        if not all_layers:
            for s in sites:
                if s.node.type_name != "MatMul" or (body and s is body[-1]):
                    modes[id(s)] = backup
            body = [s for s in body if modes[id(s)] == mode]
        for s in body:
            if group != -1 and s.value.shape[s.axis] % group:
                modes[id(s)] = backup  # the reduced axis does not split into groups
        for s in _by_ratio([s for s in body if modes[id(s)] == mode], ratio, mode, group):
            modes[id(s)] = backup
    done: dict[tuple[int, int], Output] = {}
    for s in sites:
        key = (id(s.source.node), s.source.index)
        if key not in done:
            m = modes[id(s)]
            done[key] = decompression_subgraph(s, compress(s.value, s.axis, m, group if m == mode else -1), m)
        s.node.set_argument(s.port, done[key])
    work.validate_nodes_and_infer_types()
    return work


def find_weight_sites(info: GraphInfo) -> list[WeightSite]:
    """Float constant weights of MatMuls (reduced axis: K) and of embedding Gathers (reduced axis: the last)."""
    sites = []
    for node in info.ops:
        port = axis = None
        if node.type_name == "MatMul":
            port = info.weight_port(node)
            if port is not None:
                rank = node.get_input_partial_shape(port).rank.get_length()
                transpose = node.transpose_b if port == 1 else node.transpose_a
                axis = (rank - 1 if transpose else rank - 2) if port == 1 else (rank - 2 if transpose else rank - 1)
        elif node.type_name == "Gather" and not info.is_dynamic(node.input_value(0)) \
                and info.is_dynamic(node.input_value(1)) and node.get_input_element_type(0).is_real():
            port, axis = 0, -1
        if port is None:
            continue
        value = info.const_value(node.input_value(port))
        if value is None or value.ndim < 2:
            continue
        sites.append(WeightSite(node, port, axis % value.ndim, value.astype(np.float32)))
    return sites


def compress(w: np.ndarray, axis: int, mode: CompressWeightsMode, group: int = -1) -> CompressedWeight:
    """Integer codes of ``w`` reduced along ``axis`` (in groups of ``group`` when not -1), NNCF's formulas."""
    dtype, lo, hi, symmetric = _MODES[mode]
    grouped_shape = None
    if group != -1 and w.shape[axis] > group:
        grouped_shape = w.shape[:axis] + (w.shape[axis] // group, group) + w.shape[axis + 1:]
        w = w.reshape(grouped_shape)
        axis += 1
    if symmetric:
        if mode == CompressWeightsMode.INT4_SYM:  # the signed extreme maps to -8 (NNCF's signed scale)
            idx = np.expand_dims(np.argmax(np.abs(w), axis=axis), axis)
            scale = np.take_along_axis(w, idx, axis) / lo
        else:
            scale = np.max(np.abs(w), axis=axis, keepdims=True) / hi
        scale = np.where(np.abs(scale) < np.finfo(np.float16).tiny, np.finfo(np.float16).tiny, scale)
        scale = scale.astype(np.float16).astype(np.float32)
        codes = np.clip(np.rint(w / scale), lo, hi)
        zp = None
    else:
        w_min = np.minimum(np.min(w, axis=axis, keepdims=True), 0)
        w_max = np.maximum(np.max(w, axis=axis, keepdims=True), 0)
        scale = (w_max - w_min) / (hi - lo)
        scale = np.where(scale < np.finfo(np.float16).tiny, np.finfo(np.float16).tiny, scale)
        scale = scale.astype(np.float16).astype(np.float32)
        zp = np.clip(np.rint(-w_min / scale) + lo, lo, hi)
        codes = np.clip(np.rint(w / scale) + zp, lo, hi)
        zp = zp.astype(dtype)
    return CompressedWeight(codes.astype(dtype), scale.astype(np.float16), zp, grouped_shape)


def decompress(c: CompressedWeight, shape: tuple[int, ...]) -> np.ndarray:
    """The float weights the decompression subgraph computes (for tests and ratio decisions)."""
    x = c.codes.astype(np.float32)
    if c.zero_point is not None:
        x = x - c.zero_point.astype(np.float32)
    return (x * c.scale.astype(np.float32)).reshape(shape)


def decompression_subgraph(site: WeightSite, c: CompressedWeight, mode: CompressWeightsMode) -> Output:
    """Build ``Constant -> Convert -> [Subtract zp] -> Multiply scale -> [Reshape] -> Convert(f32)``."""
    base = site.source.node.friendly_name
    out = Convert(Constant(c.codes, name=base), destination_type=Type.f16).output(0)
    if c.zero_point is not None:
        zp = Convert(Constant(c.zero_point, name=f"{base}/zero_point"), destination_type=Type.f16)
        out = Subtract(out, zp, name=f"{base}/zero_point/subtract").output(0)
    name = f"{base}/fq_weights_{site.port}"
    out = Multiply(out, Constant(c.scale, name=f"{base}/scale"), name=name).output(0)
    if c.grouped_shape is not None:
        out = Reshape(out, Constant(np.array(site.value.shape, np.int64)), special_zero=False).output(0)
    target = site.source.element_type
    return Convert(out, destination_type=target, name=f"{name}/convert").output(0) if target != Type.f16 else out


def _by_ratio(sites: list[WeightSite], ratio: float, mode: CompressWeightsMode, group: int) -> list[WeightSite]:
    """The layers to keep in the backup mode so that ``ratio`` of the weights are 4-bit: largest error first."""
    if ratio >= 1.0 or not sites:
        return []
    total = sum(s.value.size for s in sites)
    errors = []
    for s in sites:
        approx = decompress(compress(s.value, s.axis, mode, group), s.value.shape)
        errors.append(float(np.mean((approx - s.value) ** 2) / max(float(np.mean(s.value ** 2)), 1e-12)))
    kept, backup = 0, []
    for _, s in sorted(zip(errors, sites, strict=True), key=lambda t: t[0]):
        if kept + s.value.size <= ratio * total:
            kept += s.value.size
        else:
            backup.append(s)
    return backup
