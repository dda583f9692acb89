"""Fast bias correction (NNCF's ``FastBiasCorrection``): after the weights are quantized, shift each layer's
bias so that its mean output, per channel, is what it was with the float weights.

The float input mean of each channel, from the calibration set, is broadcast to the layer's input shape and run
through the layer twice, with the float and with the quantized weights; ``bias += mean(float) - mean(quantized)``.
NNCF takes the float side from the float model's measured output mean instead; that mean also differs from the
layer's output on the mean input by border effects (zero padding) and variable input shapes, and NNCF moves the
bias by that difference too, which has nothing to do with quantization (ddddocr's recogniser: 81% of strings
unchanged with it, 89% without; ``benchmarks/quantize_check.py``). A bias that would move by more than
``threshold`` times its own size (or a bias with a zero in it) is left as it was, as NNCF does.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 4], ov.Type.f32, name="x")
>>> mm = ov.opset1.matmul(x, np.ones((4, 2), np.float32), False, False)
>>> y = ov.opset1.add(mm, np.array([0.5, 1.0], np.float32))
>>> [(s.layer.type_name, s.out_axis) for s in find_bias_sites(GraphInfo(ov.Model([y], [x])), [mm])]
[('MatMul', -1)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vinerun.ir import Node
from vinerun.ir.core_ops import Constant
from vinerun.quantization.graph import GraphInfo
from vinerun.quantization.ranges import fake_quantize


@dataclass
class BiasSite:
    """A linear layer followed by ``Add(layer, bias)``: the bias input, and the channel axes of input and output."""

    layer: Node
    bias_add: Node
    bias_port: int
    act_port: int
    in_axis: int
    out_axis: int


def find_bias_sites(info: GraphInfo, layers: list[Node]) -> list[BiasSite]:
    """The layers whose only reader is an Add of a constant, per-output-channel bias."""
    sites = []
    for layer in layers:
        port = info.weight_port(layer)
        readers = info.consumers(layer.output(0))
        if port is None or len(readers) != 1 or readers[0][0].type_name != "Add":
            continue
        add, layer_port = readers[0]
        bias = info.const_value(add.input_value(1 - layer_port))
        out_shape = layer.get_output_partial_shape(0)
        if bias is None or not out_shape.rank.is_static:
            continue
        is_matmul = layer.type_name == "MatMul"
        out_axis = -1 if is_matmul else 1
        channels = out_shape[out_axis]
        if not channels.is_static or bias.size != channels.get_length() or bias.size < 1:
            continue
        if bias.ndim > 1 and bias.shape[out_axis] != bias.size:
            continue
        sites.append(BiasSite(layer, add, 1 - layer_port, 1 - port, -1 if is_matmul else 1, out_axis))
    return sites


def corrected_bias(site: BiasSite, info: GraphInfo, in_mean: np.ndarray, in_shape: tuple[int, ...],
                   w_low: np.ndarray, w_high: np.ndarray, levels: int, threshold: float) -> np.ndarray | None:
    """The new bias value, or None when NNCF's threshold rule keeps the old one."""
    weight_src = site.layer.input_value(1 - site.act_port)
    if weight_src.node.type_name == "FakeQuantize":
        weight_src = weight_src.node.input_value(0)
    weights = info.const_value(weight_src)
    bias = info.const_value(site.bias_add.input_value(site.bias_port))
    if weights is None or bias is None or np.any(bias == 0):
        return None
    shape = list(in_shape)
    if len(shape) > 1:
        shape[0] = 1
    axis_shape = [1] * len(shape)
    axis_shape[site.in_axis] = -1
    blob = np.broadcast_to(np.asarray(in_mean, np.float32).reshape(axis_shape), shape).copy()
    w = weights.astype(np.float32)
    # the layer is linear in its weights: mean(float) - mean(quantized) is the mean output of the weights' error
    error = w - fake_quantize(w, w_low, w_high, levels)
    args = [blob, error] if site.act_port == 0 else [error, blob]
    lost = np.asarray(site.layer.evaluate(args)[0], np.float32)
    shift = lost.mean(axis=tuple(a for a in range(lost.ndim) if a != site.out_axis % lost.ndim))
    new_bias = bias + shift.reshape(bias.shape)
    magnitude = float(np.max(np.abs((new_bias - bias) / bias)))
    return new_bias.astype(bias.dtype) if magnitude < threshold else None


def set_bias(site: BiasSite, value: np.ndarray) -> None:
    """Replace the bias input of ``site`` by a constant holding ``value``."""
    old = site.bias_add.input_value(site.bias_port)
    site.bias_add.set_argument(site.bias_port, Constant(value.astype(np.float32), name=old.node.friendly_name))

