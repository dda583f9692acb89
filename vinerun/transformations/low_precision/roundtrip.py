"""A per-tensor QuantizeLinear read only by DequantizeLinears of the same parameters, on an f32 value no int8
layer took: a rounding to the quantization grid, kept in f32 as one ``FakeQuantize`` (OpenVINO converts such
Q/DQ pairs the same way). ONNX quantizers write these around ops that have no int8 form (Softmax, Mul, Add,
GELU...); as two kernels they cost two passes and an int8 tensor between, as one a single pass.

``FakeQuantize`` rounds relative to its low limit, here ``(q_min - zero_point) * scale``: the same grid, an
integer number of steps away, so the values agree (halfway ties may round the other way).
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ops.fake_quantize import FakeQuantize
from vinerun.transformations.low_precision.params import activation_params
from vinerun.transformations.pass_infra import InPlacePass, PassResult


class QuantizeDequantizeToFakeQuantize(InPlacePass):
    """Same-parameter Q -> DQ pairs on f32 values become FakeQuantize (see the module)."""

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if node.type_name == "QuantizeLinear":
                modified |= self._convert(node)
        return PassResult(model, modified)

    def _convert(self, q: Node) -> bool:
        params = activation_params(q)
        if params is None or q.get_input_element_type(0).get_type_name() != "f32":
            return False
        readers = [t.get_node() for t in q.output(0).get_target_inputs()]
        if not readers or any(r.type_name != "DequantizeLinear" or activation_params(r) != params
                              or r.get_output_element_type(0).get_type_name() != "f32" for r in readers):
            return False
        low, high = params.real_range()
        limits = [Constant(np.array(v, np.float32), name=f"{q.friendly_name}/{n}").output(0)
                  for v, n in ((low, "low"), (high, "high"))]
        qmin, qmax = params.limits
        fq = FakeQuantize(q.input_value(0), *limits, *limits, levels=qmax - qmin + 1, name=q.friendly_name)
        for dq in readers:
            replace_output_update_name(dq.output(0), fq.output(0))
            dq.detach()
        q.detach()
        return True
