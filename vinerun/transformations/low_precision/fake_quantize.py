"""FakeQuantize (OpenVINO IR, as NNCF writes it) decomposed into the Q/DQ form the fusion reads.

An activation ``FakeQuantize`` with 256 levels (255 on weights), per-tensor limits, the same input and output
ranges and a range whose low end falls on the integer grid becomes ``QuantizeLinear -> DequantizeLinear``
(u8 with a zero point; i8 when the range is symmetric around 0, as NNCF's signed ranges are). One on a
constant (weights, per output channel) becomes an int8 constant and a ``DequantizeLinear`` along axis 0.
Anything else stays a FakeQuantize and runs in f32.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.ops.quantization import DequantizeLinear, QuantizeLinear
from vinerun.transformations.low_precision.params import FAKE_QUANTIZE_RANGE, constant_value, fake_quantize_grid
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _grid(fq: Node) -> tuple[np.ndarray, np.ndarray, np.dtype] | None:
    """(scale, zero point, integer type) of FakeQuantize limits, or None when they do not map onto int8."""
    found = fake_quantize_grid(fq)
    if found is None:
        return None
    scale, zp = found
    levels = fq.levels  # type: ignore[attr-defined]
    if levels == 256 and np.all(zp == 128) or levels == 255 and np.all(zp == 127):
        return scale, np.zeros_like(zp), np.dtype(np.int8)  # symmetric: i8 with no zero point
    return (scale, zp, np.dtype(np.uint8)) if levels == 256 else None


class FakeQuantizeDecomposition(InPlacePass):
    """8-bit FakeQuantize nodes become Q/DQ pairs or int8 constants (see the module)."""

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if node.type_name == "FakeQuantize" and node.levels in (255, 256):  # type: ignore[attr-defined]
                modified |= self._decompose(node)
        return PassResult(model, modified)

    def _decompose(self, fq: Node) -> bool:
        found = _grid(fq)
        if found is None:
            return False
        scale, zp, dtype = found
        source = fq.input_value(0)
        if isinstance(source.node, Constant):
            return self._weights(fq, source.node.get_value(), scale, zp, dtype)
        axis = 1
        if scale.size == 1:
            s = Constant(np.float32(scale.reshape(-1)[0]), name=f"{fq.friendly_name}/scale").output(0)
            z = Constant(np.asarray(zp.reshape(-1)[0], dtype), name=f"{fq.friendly_name}/zero_point").output(0)
        else:  # per channel (axis 1), as NNCF quantizes a depthwise convolution's input
            rank = source.partial_shape.rank
            full = scale.shape if rank.is_dynamic else (1,) * (rank.get_length() - scale.ndim) + scale.shape
            if rank.is_dynamic or len(full) < 2 or any(d != 1 for i, d in enumerate(full) if i != 1):
                return False
            s = Constant(scale.reshape(-1).astype(np.float32), name=f"{fq.friendly_name}/scale").output(0)
            z = Constant(zp.reshape(-1).astype(dtype), name=f"{fq.friendly_name}/zero_point").output(0)
        q = QuantizeLinear(source, s, z, axis=axis, name=f"{fq.friendly_name}/quantize")
        dq = DequantizeLinear(q.output(0), s, z, axis=axis, name=f"{fq.friendly_name}/dequantize")
        if scale.size == 1:  # the limits openvino computes with, for the int8 epilogue to repeat its arithmetic
            limits = (float(np.float32(constant_value(fq.input_value(i)).reshape(-1)[0])) for i in (1, 2))  # type: ignore[union-attr]
            q.rt_info[FAKE_QUANTIZE_RANGE] = dq.rt_info[FAKE_QUANTIZE_RANGE] = tuple(limits)
        replace_output_update_name(fq.output(0), dq.output(0))
        fq.detach()  # a dead node still counts among its producers' readers
        return True

    def _weights(self, fq: Node, w: np.ndarray, scale: np.ndarray, zp: np.ndarray, dtype: np.dtype) -> bool:
        """Weights: an int8 constant (per tensor, or per channel along one axis: a convolution's output channels,
        a MatMul's columns) and its dequantization."""
        if dtype != np.int8 or w.ndim == 0 or scale.ndim > w.ndim:
            return False
        full = (1,) * (w.ndim - scale.ndim) + scale.shape
        varying = [i for i, d in enumerate(full) if d != 1]
        if len(varying) > 1 or varying and full[varying[0]] != w.shape[varying[0]]:
            return False
        axis = varying[0] if varying else 0
        bcast = scale.reshape(full)
        lo = -127 if fq.levels == 255 else -128  # type: ignore[attr-defined]
        q = np.clip(np.rint(w.astype(np.float64) / bcast), lo, 127).astype(np.int8)
        values = Constant(q, name=f"{fq.friendly_name}/int8").output(0)
        per_channel = scale.reshape(-1).astype(np.float32) if varying else np.float32(scale.reshape(-1)[0])
        s = Constant(per_channel, name=f"{fq.friendly_name}/scale").output(0)
        dq = DequantizeLinear(values, s, axis=axis, output_type=Type(w.dtype), name=f"{fq.friendly_name}/dequantize")
        replace_output_update_name(fq.output(0), dq.output(0))
        fq.detach()
        return True
