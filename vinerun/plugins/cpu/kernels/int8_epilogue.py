"""A quantized layer's epilogue (what follows its s32 accumulation) in the fewest oneDNN post-ops.

On oneDNN's AMX and VNNI kernels an int8 layer's time is mostly its epilogue: a ResNet-50 1x1 convolution
(64 -> 256 channels, 56 x 56, one thread on AMX) takes ~130 us with no post-op, ~185 us with one linear op and
~260 us with a requantization (four eltwise ops). So before the post-ops are written, exact identities shrink
the chain:

* a ReLU or clamp whose bounds the next quantization's saturation applies anyway is dropped (a ReLU before a
  u8 output of zero point 0), and a clamp before a requantization narrows its integer limits instead (rounding
  is monotonic: ``round(clip(u, a, b)) = clip(round(u), round(a), round(b))``);
* consecutive clamps merge, and so do consecutive linear ops;
* a leading requantization's ``1 / scale`` and zero point go into the weight scales and the bias, and with no
  stage at all the output's do (the destination's conversion then rounds and saturates).

Float rounding aside (``(acc a + b) / s`` against ``acc (a / s) + b / s``), the result is the layer's. Where
openvino's numbers are the reference (an output of zero point 0 after clamps, a ResNet residual block),
:func:`_openvino_order` repeats its order of operations instead, so that float ties round as in openvino.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vinerun.plugins.cpu.kernels._dnnl import ARG_DST, ARG_SRC, ARG_WEIGHTS, ELTWISE, INT_TYPES
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD, BINARY_MUL
from vinerun.transformations.low_precision import Quantization, QuantizedLayer
from vinerun.transformations.low_precision.ops import Stage
from vinerun.transformations.low_precision.params import ChannelQuantization, fake_quantize_shift

AnyQuantization = Quantization | ChannelQuantization


@dataclass
class Epilogue:
    """What a oneDNN int8 primitive is given: the weight scales (one per output channel; None for runtime
    weights, whose single scale is the layer's), the f32 bias, the post-ops, the input index of the residual its
    sum post-op reads (None without one) and the destination scale (None: the post-ops' result is written)."""

    weight_scales: np.ndarray | None
    bias: np.ndarray | None
    ops: list[tuple]
    residual: int | None
    dst_scale: float | None
    src_zero_point: int | None = None  # None: the layer's input zero point

    def attributes(self, layer: QuantizedLayer, weight_mask: int) -> dict:
        """The primitive's scales and zero points (oneDNN's int8 attributes)."""
        weights = layer.weights
        weight_scales = (0, np.float32([weights.scale])) if isinstance(weights, Quantization) else \
            (weight_mask, self.weight_scales)
        scales = {ARG_SRC: (0, np.float32([layer.input.scale])), ARG_WEIGHTS: weight_scales}
        if self.dst_scale is not None:
            scales[ARG_DST] = (0, np.float32([self.dst_scale]))
        zero_point = layer.input.zero_point if self.src_zero_point is None else self.src_zero_point
        return {"scales": scales, "zero_points": {ARG_SRC: zero_point}}

    def without_source_zero_point(self, layer: QuantizedLayer, weight_sums: np.ndarray) -> Epilogue:
        """The source zero point as a bias term instead: ``sum(w (x - z)) = sum(w x) - z sum(w)``, so the bias
        loses ``z s_x s_w[c] sum(w[c])`` (``weight_sums``: each output channel's integer weights summed). Exact
        only where the primitive reads no padding (padding stands for the zero point); oneDNN's brgconv / brgemm
        AMX kernels of this version take no source zero point and a layer with one fell to jit_1x1 (MobileNetV2
        QDQ's expansions: 1.2-1.5x the time)."""
        z = layer.input.zero_point
        if not z or self.weight_scales is None:
            return self
        shift = np.float64(z) * np.float64(layer.input.scale) * self.weight_scales.astype(np.float64) * weight_sums
        bias = -shift if self.bias is None else self.bias.astype(np.float64) - shift
        return replace(self, bias=bias.astype(np.float32), src_zero_point=0)


@dataclass
class _Step:
    """A stage as the epilogue works on it: a clamp (a ReLU is one), a requantization to ``q``'s grid saturated
    to the integers ``[low, high]``, a sum of input ``index`` dequantized by ``q``, or an ``add`` of a constant
    per channel."""

    kind: str
    low: float = -np.inf
    high: float = np.inf
    q: AnyQuantization | None = None
    index: int = 0
    operand: np.ndarray | None = None
    mode: str = ""

    @staticmethod
    def of(stage: Stage) -> _Step:
        if stage.kind == "relu":
            return _Step("clamp", 0.0, np.inf)
        if stage.kind == "clamp":
            return _Step("clamp", stage.low, stage.high, q=stage.quantization)
        if stage.kind == "requantize":
            q = stage.quantization
            assert q is not None  # noqa: S101 - a requantization always has its grid
            return _Step("requantize", *q.limits, q=q)
        return _Step(stage.kind, q=stage.quantization, index=stage.index, operand=stage.operand, mode=stage.mode)


def epilogue(layer: QuantizedLayer, dst_dtype: np.dtype, rank: int = 4) -> Epilogue | None:
    """``layer``'s epilogue for oneDNN, or None where a stage has no exact form (a per-channel output scale
    after a sum, a sum into a destination of another size). ``rank``: the destination's, as the primitive sees
    it (a constant operand is broadcast over it)."""
    out = layer.output
    stages = [_Step.of(stage) for stage in layer.stages]
    if isinstance(out, ChannelQuantization) and any(step.kind == "sum" for step in stages):
        return None  # the sum's destination scale would be per channel too
    steps = _without_redundant_clamps(_merged_clamps(stages), out)
    scales = None if layer.runtime_weights else np.asarray(layer.weights.scales, np.float32)  # type: ignore[union-attr]
    bias = layer.bias
    if scales is not None and isinstance(out, Quantization) and not out.zero_point:
        as_openvino = _openvino_order(steps, out, dst_dtype)
        if as_openvino is not None:
            ops, residual, dst_scale = as_openvino
            return Epilogue(scales, bias, ops, residual, dst_scale)
    ops: list[tuple] = []
    if scales is not None and steps and steps[0].kind == "requantize":  # its 1 / s and zero point in the scales
        first = steps.pop(0)
        scales, bias = _into_grid(scales, bias, first.q)  # type: ignore[arg-type]
        ops += _round(first) + _from_grid(first.q, rank)  # type: ignore[arg-type]
    elif scales is not None and out is not None and (not steps or isinstance(out, Quantization) and all(
            step.kind == "clamp" for step in steps)):
        # the destination rounds and saturates; clamps move to the grid (a monotonic map, as for a requantization)
        scales, bias = _into_grid(scales, bias, out)
        return Epilogue(scales, bias, [_clamp(_on_grid(step, out)) for step in steps], None, None)  # type: ignore[arg-type]
    residual = None
    for step in steps:
        if step.kind == "add":
            shape = [1] * rank
            shape[layer.channel_axis] = -1
            ops.append(("binary", BINARY_ADD, np.asarray(step.operand, np.float32).reshape(shape)))
        elif step.kind == "clamp":
            ops.append(_clamp(step))
        elif step.kind == "gelu":
            ops.append(("eltwise", ELTWISE["gelu_tanh" if step.mode == "TANH" else "gelu_erf"], 0.0, 0.0))
        elif step.kind == "requantize":
            ops += _to_grid(step.q, rank) + _round(step) + _from_grid(step.q, rank)  # type: ignore[arg-type]
        else:  # a sum into the destination (read in place of it, so of the same size)
            assert step.kind == "sum"  # noqa: S101 - the stages' kinds are the ones above
            q = step.q
            assert isinstance(q, Quantization)  # noqa: S101 - per tensor: a per-channel one is never fused
            if q.dtype.itemsize != dst_dtype.itemsize:
                return None
            ops.append(("sum", q.scale, q.zero_point, INT_TYPES[q.dtype.name]))
            residual = step.index
    if isinstance(out, ChannelQuantization):  # 1 / scale and the zero point per channel; the destination rounds
        return Epilogue(scales, bias, _merged_linears(ops + _to_grid(out, rank)), residual, None)
    if out is None:
        return Epilogue(scales, bias, _merged_linears(ops), residual, None)
    if out.zero_point:
        # the zero point as a shift before the scale divides, (y + z s) / s = y / s + z: oneDNN's brgconv / brgemm
        # kernels (AMX, VNNI) take no destination zero point, and without them a layer fell to jit_1x1
        ops.append(("eltwise", ELTWISE["linear"], 1.0, float(out.zero_point) * float(out.scale)))
    ops = _merged_linears(ops)
    scaled = _divided(ops, out.scale)
    return Epilogue(scales, bias, ops, residual, out.scale) if scaled is None else \
        Epilogue(scales, bias, scaled, residual, None)


def _openvino_order(steps: list[_Step], out: Quantization, dst_dtype: np.dtype) -> tuple[list[tuple], int | None,
                                                                                           float] | None:
    """(post-ops, residual input, destination scale) that repeat openvino's CPU plugin op for op on the two
    patterns of int8 CNNs (NNCF's ResNets), so that rounding ties fall as in openvino and the outputs agree bit
    for bit; None for other chains. After the weight scales and the bias:

    * clamps, then the closing quantization as the destination scale ``1 / fake_quantize_scale``;
    * a residual block (the convolution's own quantization to grid ``x`` with its rounding dropped, a sum with the
      integers ``r`` of grid ``r``, ReLUs, the closing quantization): see :func:`_residual_in_grid`."""
    if all(step.kind == "clamp" for step in steps):
        return [_clamp(step) for step in steps], None, float(np.float32(1.0) / out.fake_quantize_scale())
    if len(steps) < 2 or steps[0].kind != "clamp" or steps[1].kind != "sum" or \
            any(step.kind != "clamp" or (step.low, step.high) != (0.0, np.inf) for step in steps[2:]):
        return None
    x, r = steps[0].q, steps[1].q
    if not isinstance(x, Quantization) or not isinstance(r, Quantization) or x.zero_point or r.zero_point or \
            r.dtype.itemsize != dst_dtype.itemsize:
        return None
    ops = [*_residual_in_grid(x, r), ("sum", 1.0, 0, INT_TYPES[r.dtype.name]), *(_clamp(step) for step in steps[2:])]
    # the dequantization by s_r after the sum moved into the closing FakeQuantize's limits (through the ReLUs)
    return ops, steps[1].index, float(np.float32(1.0) / out.fake_quantize_scale(r.scale))


def _residual_in_grid(x: Quantization, r: Quantization) -> list[tuple]:
    """The convolution's side of a residual sum in the residual's integers, as openvino computes it: its
    AddTransformation rescales this branch by ``k = s_x / s_r`` and folds that into the FakeQuantize's output
    limits (``lo k``, ``hi k``); the CPU plugin then merges the FakeQuantize without rounding into one linear
    op and a clip (``y isc osc + ish osc + osh``, a shift under 1e-5 of the range dropped), all in f32."""
    f32 = np.float32
    lo, hi = x.limits
    k = f32(f32(x.scale) / f32(r.scale))
    out_low, out_high = f32(f32(lo) * k), f32(f32(hi) * k)
    osc = f32(f32(out_high - out_low) / f32(hi - lo))
    isc = x.fake_quantize_scale()
    clip_low, clip_high = out_low, f32(f32(f32(hi - lo) * osc) + out_low)
    shift = fake_quantize_shift(f32(f32(f32(-x.fake_quantize_limits()[0] * isc) * osc) + out_low), clip_high - clip_low)
    return [("eltwise", ELTWISE["linear"], float(f32(isc * osc)), float(shift)),
            ("eltwise", ELTWISE["clip"], float(clip_low), float(clip_high))]


def _divided(ops: list[tuple], scale: float) -> list[tuple] | None:
    """``ops`` followed by a division by ``scale`` (> 0) as ``ops`` alone: the division moves back through sums
    (their scale), clips (their bounds) and ReLUs into the last linear op; None where something else comes
    first (a rounding: the destination's scale stays an attribute)."""
    linear, clip, relu = ELTWISE["linear"], ELTWISE["clip"], ELTWISE["relu"]
    out = list(ops)
    for i in reversed(range(len(out))):
        op = out[i]
        if op[0] == "sum":
            out[i] = ("sum", op[1] / scale, *op[2:])
        elif op[:2] == ("eltwise", clip):
            out[i] = (*op[:2], op[2] / scale, op[3] / scale)
        elif op[:2] == ("eltwise", linear):
            out[i] = (*op[:2], op[2] / scale, op[3] / scale)
            return out
        elif op[:2] != ("eltwise", relu):
            return None
    return None


def _merged_clamps(steps: list[_Step]) -> list[_Step]:
    """Consecutive clamps as one where their ranges meet (``clip(clip(x, a, b), c, d)``)."""
    out: list[_Step] = []
    for step in steps:
        last = out[-1] if out else None
        if last is not None and step.kind == last.kind == "clamp" and max(last.low, step.low) <= min(last.high,
                                                                                                     step.high):
            out[-1] = _Step("clamp", max(last.low, step.low), min(last.high, step.high))
        else:
            out.append(step)
    return out


def _without_redundant_clamps(steps: list[_Step], out: AnyQuantization | None) -> list[_Step]:
    """Drops the clamps the next quantization's saturation covers and folds one before a per-tensor
    requantization into its integer limits."""
    result: list[_Step] = []
    for i, step in enumerate(steps):
        following = steps[i + 1] if i + 1 < len(steps) else None
        if step.kind != "clamp" or (following is not None and following.kind != "requantize"):
            result.append(step)
            continue
        if following is None:  # the output's quantization (if any) saturates to its type's range
            if out is None or not _covers(out, *out.limits, step):
                result.append(step)
            continue
        q = following.q
        assert q is not None  # noqa: S101 - a requantization always has its grid
        if _covers(q, following.low, following.high, step):
            continue
        if isinstance(q, Quantization):
            low, high = _grid_point(q, step.low), _grid_point(q, step.high)
            low, high = max(following.low, low), min(following.high, high)
            if low <= high:
                following.low, following.high = low, high
                continue
        result.append(step)
    return result


def _covers(q: AnyQuantization, low: float, high: float, clamp: _Step) -> bool:
    """Whether saturating to ``q``'s integers ``[low, high]`` already bounds values as ``clamp`` does: the grid's
    real range lies inside the clamp's."""
    scales = np.float64(q.scale) if isinstance(q, Quantization) else q.scales.astype(np.float64)
    zero_points = np.float64(q.zero_point) if isinstance(q, Quantization) else q.zero_points.astype(np.float64)
    real_low, real_high = (low - zero_points) * scales, (high - zero_points) * scales
    return bool(np.all(clamp.low <= real_low) and np.all(clamp.high >= real_high))


def _grid_point(q: Quantization, value: float) -> float:
    """``value`` on ``q``'s integer grid, rounded as the post-ops round (half to even, in f32); +-inf stay."""
    if np.isinf(value):
        return value
    return float(np.rint(np.float32(value) * np.float32(1.0 / q.scale) + np.float32(q.zero_point)))


def _on_grid(clamp: _Step, q: Quantization) -> _Step:
    """``clamp``'s bounds mapped to ``q``'s grid, ``x / s + z``."""
    inverse = 1.0 / q.scale
    return _Step("clamp", clamp.low * inverse + q.zero_point, clamp.high * inverse + q.zero_point)


def _into_grid(scales: np.ndarray, bias: np.ndarray | None, q: AnyQuantization) -> tuple[np.ndarray, np.ndarray | None]:
    """Weight scales and bias that give ``y / s + z`` where they gave ``y`` (``q``'s scale and zero point, per
    tensor or per channel)."""
    if isinstance(q, Quantization):
        inverse, zero_points = np.float64(1.0 / q.scale), np.float64(q.zero_point)
    else:
        inverse, zero_points = 1.0 / q.scales.astype(np.float64), q.zero_points.astype(np.float64)
    shift = np.broadcast_to(zero_points, scales.shape)
    if bias is not None:
        shift = bias.astype(np.float64) * inverse + shift
    folded_bias = None if not np.any(shift) else np.ascontiguousarray(shift, np.float32)
    return (scales.astype(np.float64) * inverse).astype(np.float32), folded_bias


def _column(values: np.ndarray, rank: int) -> np.ndarray:
    """Per-channel values (axis 1) as a binary post-op's operand."""
    return np.ascontiguousarray(values, np.float32).reshape([1, -1] + [1] * (rank - 2))


def _to_grid(q: AnyQuantization, rank: int) -> list[tuple]:
    """``y / s + z``."""
    if isinstance(q, Quantization):
        return [("eltwise", ELTWISE["linear"], 1.0 / q.scale, float(q.zero_point))]
    shift = [("binary", BINARY_ADD, _column(q.zero_points, rank))] if np.any(q.zero_points) else []
    return [("binary", BINARY_MUL, _column(1.0 / q.scales, rank)), *shift]


def _round(step: _Step) -> list[tuple]:
    """Rounding to the grid's integers and saturating to the step's limits."""
    return [("eltwise", ELTWISE["round"], 0.0, 0.0), ("eltwise", ELTWISE["clip"], float(step.low), float(step.high))]


def _from_grid(q: AnyQuantization, rank: int) -> list[tuple]:
    """``(g - z) s``: grid integers back to real values."""
    if isinstance(q, Quantization):
        return [("eltwise", ELTWISE["linear"], q.scale, -q.zero_point * q.scale)]
    unshift = [("binary", BINARY_ADD, _column(-q.zero_points.astype(np.float32), rank))] if np.any(q.zero_points) \
        else []
    return [*unshift, ("binary", BINARY_MUL, _column(q.scales, rank))]


def _clamp(step: _Step) -> tuple:
    if step.low == 0.0 and step.high == np.inf:
        return ("eltwise", ELTWISE["relu"], 0.0, 0.0)
    return ("eltwise", ELTWISE["clip"], float(step.low), float(step.high))


def _merged_linears(ops: list[tuple]) -> list[tuple]:
    """Consecutive linear ops ``a x + b`` as one; a shift (``x + b``) after a sum joins a linear op before it (a
    sum adds: the shift moves across it)."""
    linear = ("eltwise", ELTWISE["linear"])
    out: list[tuple] = []
    for op in ops:
        if op[:2] == linear and out and out[-1][:2] == linear:
            last = out[-1]
            out[-1] = (*linear, last[2] * op[2], last[3] * op[2] + op[3])
        elif op[:2] == linear and op[2] == 1.0 and len(out) >= 2 and out[-1][0] == "sum" and out[-2][:2] == linear:
            before = out[-2]
            out[-2] = (*linear, before[2], before[3] + op[3])
        else:
            out.append(op)
    return out
