"""Weight quantizers: a FakeQuantize on the float weights of each Convolution / MatMul, symmetric per output
channel with 255 levels (NNCF's ``q8_w_sym``), inserted between the constant and the layer.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 4], ov.Type.f32, name="x")
>>> mm = ov.opset1.matmul(x, np.ones((4, 2), np.float32), False, False, name="fc")
>>> model = ov.Model([mm], [x])
>>> [fq.friendly_name for fq in quantize_weights(GraphInfo(model), [mm])]
['fc/fq_weights_1']
"""

from __future__ import annotations

from vinerun.ir import Node
from vinerun.quantization.graph import GraphInfo, weight_channel_axes
from vinerun.quantization.insertion import insert_on, make_fake_quantize
from vinerun.quantization.ranges import WEIGHT_LEVELS, weight_range


def quantize_weights(info: GraphInfo, layers: list[Node]) -> list[Node]:
    """Insert a weight FakeQuantize for each layer with constant float weights; returns the new nodes."""
    made = []
    for node in layers:
        port = info.weight_port(node)
        if port is None:
            continue
        source = node.input_value(port)
        value = info.const_value(source)
        if value is None:
            continue
        low, high = weight_range(value, weight_channel_axes(node, port, value.ndim))
        fq = make_fake_quantize(source, low, high, WEIGHT_LEVELS, f"{node.friendly_name}/fq_weights_{port}")
        insert_on(source, [(node, port)], fq)
        made.append(fq)
    return made
