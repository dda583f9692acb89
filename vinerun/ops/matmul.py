"""MatMul (opset1): NumPy matmul semantics with optional transposes of the last two dims."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape


@register_op
class MatMul(Node):
    """Matrix product, batch dims broadcast; ``transpose_a`` / ``transpose_b`` swap an input's last two axes."""

    type_name, version, num_inputs = "MatMul", "opset1", (2, 2)
    transpose_a = Attr("bool", False)
    transpose_b = Attr("bool", False)

    def infer(self) -> list:
        a, b = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        et = self.get_input_element_type(0)
        if a.rank.is_dynamic or b.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        da, db = list(a), list(b)
        if len(da) == 0 or len(db) == 0:
            raise ValidationError("MatMul inputs must not be scalars")
        if len(da) >= 2 and self.transpose_a:
            da[-2], da[-1] = da[-1], da[-2]
        if len(db) >= 2 and self.transpose_b:
            db[-2], db[-1] = db[-1], db[-2]
        squeeze_a, squeeze_b = len(da) == 1, len(db) == 1
        if squeeze_a:
            da = [1, da[0]]
        if squeeze_b:
            db = [db[0], 1]
        if not PartialShape([da[-1]]).compatible(PartialShape([db[-2]])):
            raise ValidationError(f"MatMul inner dimensions differ: {a} x {b}")
        batch = broadcast_shapes(PartialShape(da[:-2]), PartialShape(db[:-2]), "MatMul batch")
        out = list(batch) + ([] if squeeze_a else [da[-2]]) + ([] if squeeze_b else [db[-1]])
        return [(et, PartialShape(out))]

    def evaluate(self, inputs: list) -> list:
        a, b = inputs
        if self.transpose_a and a.ndim >= 2:
            a = np.swapaxes(a, -1, -2)
        if self.transpose_b and b.ndim >= 2:
            b = np.swapaxes(b, -1, -2)
        return [np.matmul(a, b).astype(inputs[0].dtype, copy=False)]
