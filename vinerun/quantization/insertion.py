"""Build FakeQuantize nodes into a graph: on an activation tensor, or on the constant weights of a layer.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 4], ov.Type.f32, name="x")
>>> fq = make_fake_quantize(x.output(0), np.float32(0), np.float32(1), 256, "x/fq_output_0")
>>> fq.type_name, fq.levels, fq.friendly_name
('FakeQuantize', 256, 'x/fq_output_0')
"""

from __future__ import annotations

import numpy as np

from vinerun.ir import Node, Output
from vinerun.ir.core_ops import Constant
from vinerun.ops.fake_quantize import FakeQuantize


def make_fake_quantize(source: Output, low: np.ndarray, high: np.ndarray, levels: int, name: str) -> Node:
    """``FakeQuantize(source, low, high, low, high)``: output limits equal the input limits, as NNCF writes."""
    dtype = np.float32
    limits = []
    for suffix, value in (("input_low", low), ("input_high", high), ("output_low", low), ("output_high", high)):
        limits.append(Constant(np.asarray(value, dtype), name=f"{name}/{suffix}").output(0))
    return FakeQuantize(source, *limits, levels=levels, name=name)


def insert_on(source: Output, readers: list[tuple[Node, int]], fq: Node) -> None:
    """Make ``readers`` (``(node, input index)``) read ``fq`` instead of ``source``."""
    for node, port in readers:
        if node.input_value(port) == source:
            node.set_argument(port, fq.output(0))
