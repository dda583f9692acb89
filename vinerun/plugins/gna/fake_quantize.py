"""FakeQuantize statistics a quantized model carries, read the way GNA's scale-factor pass reads them (specs/gna.md §2).

Three places give scale factors:

- an *input* FakeQuantize (after a Parameter, through reshape-like ops): the input scale ``(levels-1)/(high-low)``;
- *weights* behind a FakeQuantize, or stored as integers and decompressed (``Constant(i8/u8/i4/u4) -> Convert
  [-> Subtract zero point] -> Multiply scale``, as NNCF writes them; ONNX ``DequantizeLinear`` of an integer
  constant): the weight scale ``min over channels (levels-1)/(max-min)``, i8 weights when ``levels <= 255``;
- an *activation* FakeQuantize (on a value computed from the input): the output scale of the layer before it.

An ONNX ``QuantizeLinear -> DequantizeLinear`` pair on an activation is the same thing as a FakeQuantize with
``levels = qmax - qmin + 1`` and range ``[(qmin - zp)·s, (qmax - zp)·s]`` (only the rounding of ties differs).

>>> fq = activation_fake_quantize(node)      # doctest: +SKIP
>>> fq.scale, fq.levels, fq.source           # doctest: +SKIP
(279.8, 256, <Output Sigmoid_8:0>)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vinerun.errors import NotSupportedError
from vinerun.ir.node import Node, Output
from vinerun.ops.quantization import integer_range, is_integer_dtype
from vinerun.plugin_api.variable_state import constant_value
from vinerun.plugins.gna.quantize import OUTPUT_MULTIPLIER, WEIGHT_1B, fake_quantize_weight_scale

#: ops that only move or relabel data: a FakeQuantize behind them still belongs to the input
_MOVERS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Convert"})
#: the output-scale cap of an activation with FakeQuantize statistics: 4096 for these kinds, else 2048
_WIDE_KINDS = frozenset({"identity", "relu", "clamp", "fake_quantize"})


@dataclass(frozen=True)
class ActivationFQ:
    """A per-tensor FakeQuantize on an activation (or a Q/DQ pair): ``source`` snapped to ``levels`` values on
    ``[low, high]``."""

    node: Node
    source: Output
    levels: int
    low: float
    high: float

    @property
    def scale(self) -> float:
        """The scale factor its statistics give: ``(levels-1)/(high-low)``, levels capped at 65536."""
        return (min(self.levels, 65536) - 1) / (self.high - self.low)

    def output_scale(self, kind: str) -> float:
        """A layer's output scale under these statistics, capped at 4096 (identity, ReLU, clamp, FakeQuantize)
        or 2048 (the other activations)."""
        return min(self.scale, 4096.0 if kind in _WIDE_KINDS else 2048.0)


def _scalar(node: Node, value: np.ndarray | None, what: str) -> float:
    if value is None:
        raise NotSupportedError(f"GNA: {node.type_name} '{node.friendly_name}' has a non-constant {what}")
    v = np.asarray(value, np.float64).reshape(-1)
    if v.size == 0 or np.any(v != v[0]):
        raise NotSupportedError(f"GNA: per-channel {node.type_name} '{node.friendly_name}' on an activation is not "
                                f"supported ({what} has {v.size} values); GNA takes one scale factor per tensor")
    return float(v[0])


def activation_fake_quantize(node: Node) -> ActivationFQ | None:
    """``node`` as an activation FakeQuantize (a FakeQuantize, or a DequantizeLinear fed by a QuantizeLinear), or
    None. Per-channel ranges and a FakeQuantize that maps onto another output range raise NotSupportedError."""
    if node.type_name == "FakeQuantize":
        lo, hi, olo, ohi = (_scalar(node, constant_value(node.input_value(i)), n) for i, n in
                            ((1, "input_low"), (2, "input_high"), (3, "output_low"), (4, "output_high")))
        if not np.isclose(lo, olo) or not np.isclose(hi, ohi):
            raise NotSupportedError(f"GNA: FakeQuantize '{node.friendly_name}' maps [{lo}, {hi}] onto [{olo}, {ohi}]; "
                                    "only input range = output range is supported on activations")
        if not hi > lo:
            raise NotSupportedError(f"GNA: FakeQuantize '{node.friendly_name}' has an empty range [{lo}, {hi}]")
        return ActivationFQ(node, node.input_value(0), int(node.get_attributes()["levels"]), lo, hi)
    if node.type_name == "DequantizeLinear" and node.input_value(0).node.type_name == "QuantizeLinear":
        q = node.input_value(0).node
        s = _scalar(q, constant_value(q.input_value(1)), "scale")
        zp = _scalar(q, constant_value(q.input_value(2)), "zero point") if q.get_input_size() > 2 else 0.0
        dq_s = _scalar(node, constant_value(node.input_value(1)), "scale")
        dq_zp = _scalar(node, constant_value(node.input_value(2)), "zero point") if node.get_input_size() > 2 else 0.0
        if not np.isclose(s, dq_s) or zp != dq_zp:
            raise NotSupportedError(f"GNA: QuantizeLinear '{q.friendly_name}' and DequantizeLinear "
                                    f"'{node.friendly_name}' use different scales or zero points")
        dtype = q.get_output_element_type(0).to_dtype()
        if not is_integer_dtype(dtype) or not s > 0:
            raise NotSupportedError(f"GNA: QuantizeLinear '{q.friendly_name}' to {dtype} with scale {s} is not "
                                    "supported (integer targets with a positive scale)")
        qmin, qmax = integer_range(dtype)
        return ActivationFQ(node, q.input_value(0), qmax - qmin + 1, (qmin - zp) * s, (qmax - zp) * s)
    return None


def input_fake_quantize(param: Node) -> ActivationFQ | None:
    """The FakeQuantize (or Q/DQ pair) right after ``param``, through reshape-like ops, or None."""
    out = param.output(0)
    while True:
        targets = [t.get_node() for t in out.get_target_inputs()]
        if len(targets) != 1:
            return None
        node = targets[0]
        if node.type_name in ("QuantizeLinear", "FakeQuantize"):
            return consumer_fake_quantize(out)
        if node.type_name not in _MOVERS:
            return None
        out = node.output(0)


def consumer_fake_quantize(out: Output) -> ActivationFQ | None:
    """The FakeQuantize (or Q/DQ pair) that is the only reader of ``out``, or None."""
    targets = [t.get_node() for t in out.get_target_inputs()]
    if len(targets) != 1:
        return None
    node = targets[0]
    if node.type_name == "QuantizeLinear":
        consumers = [t.get_node() for t in node.output(0).get_target_inputs()]
        node = consumers[0] if len(consumers) == 1 else node
    return activation_fake_quantize(node) if node.type_name in ("FakeQuantize", "DequantizeLinear") else None


@dataclass(frozen=True)
class WeightStats:
    """What the weights' quantization says: ``levels`` and the per-channel spans ``max - min``."""

    levels: int
    span: np.ndarray
    source: str

    @property
    def precision(self) -> str:
        """i8 weights for 255 levels or fewer, else i16 (specs/gna.md §2)."""
        return "i8" if self.levels <= 255 else "i16"

    def weight_scale(self, w: np.ndarray) -> float:
        """``min over channels (levels-1)/span`` (×230 for i8), kept where the i8 row multipliers fit (<= 230:
        asymmetric ranges reach further from 0 than half their span)."""
        s = fake_quantize_weight_scale(np.zeros_like(self.span), self.span, self.levels)
        m = float(np.max(np.abs(w))) if np.size(w) else 0.0
        if self.precision == "i8" and m > 0:
            s = min(s, WEIGHT_1B * OUTPUT_MULTIPLIER / m)
        return s


def _int_levels(value: np.ndarray, zero_point: bool) -> int:
    lo, hi = integer_range(value.dtype)
    if lo < 0 and not zero_point and value.size and int(np.min(value.astype(np.int64))) > lo:
        return hi - lo  # symmetric narrow range (-127..127): NNCF's 255 levels
    return hi - lo + 1


def weight_statistics(out: Output) -> WeightStats | None:
    """The quantization statistics of a constant weight ``out`` (a MatMul's input 1), or None for plain f32."""
    node = out.node
    while node.type_name in ("Reshape", "Squeeze", "Unsqueeze") or (
            node.type_name == "Convert" and node.input_value(0).node.type_name != "Constant"):
        node = node.input_value(0).node
    if node.type_name == "FakeQuantize":
        olo, ohi = (constant_value(node.input_value(i)) for i in (3, 4))
        if olo is None or ohi is None:
            return None
        span = np.abs(np.asarray(ohi, np.float64) - np.asarray(olo, np.float64)).reshape(-1)
        return WeightStats(int(node.get_attributes()["levels"]), span, f"FakeQuantize '{node.friendly_name}'")
    if node.type_name == "DequantizeLinear":
        q = constant_value(node.input_value(0))
        s = constant_value(node.input_value(1))
        if q is None or s is None or not is_integer_dtype(q.dtype):
            return None
        zp = constant_value(node.input_value(2)) if node.get_input_size() > 2 else None
        levels = _int_levels(q, zp is not None and bool(np.any(np.asarray(zp) != 0)))
        return WeightStats(levels, np.abs(np.asarray(s, np.float64)).reshape(-1) * (levels - 1),
                           f"DequantizeLinear '{node.friendly_name}'")
    if node.type_name == "Multiply":
        return _decompression(node)
    return None


def _decompression(mul: Node) -> WeightStats | None:
    """``Convert(int constant) [- zero point] * scale``: levels from the integer type, spans ``scale·(levels-1)``."""
    for i in (0, 1):
        scale = constant_value(mul.input_value(1 - i))
        src, zero_point = mul.input_value(i).node, False
        if src.type_name == "Subtract":
            src, zero_point = src.input_value(0).node, True
        if src.type_name != "Convert" or src.input_value(0).node.type_name != "Constant" or scale is None:
            continue
        q = constant_value(src.input_value(0))
        if q is None or not is_integer_dtype(np.asarray(q).dtype):
            continue
        levels = _int_levels(np.asarray(q), zero_point)
        return WeightStats(levels, np.abs(np.asarray(scale, np.float64)).reshape(-1) * (levels - 1),
                           f"decompression '{mul.friendly_name}'")
    return None
