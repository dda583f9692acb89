"""ShapeOf (opset1, opset3) and the ONNX-only Size: a tensor's shape and element count as data."""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import without_attrs
from vinerun.ops._shape_helpers import index_type, rank_of


@register_op
class ShapeOf(Node):
    """The shape of input 0 as a 1-D tensor of ``output_type`` (i64 or i32)."""

    type_name, version, num_inputs = "ShapeOf", "opset3", (1, 1)
    output_type = Attr("type", Type.i64)

    def infer(self) -> list:
        r = rank_of(self.get_input_partial_shape(0))
        return [(index_type(self.output_type), PartialShape([-1 if r is None else r]))]

    def static_value(self) -> np.ndarray | None:
        """The output, when input 0's shape is static (lets translators and passes fold it)."""
        ps = self.get_input_partial_shape(0)
        if not ps.is_static:
            return None
        return np.array([int(d) for d in ps], dtype=self.output_type.to_dtype())

    def partial_value(self) -> list[int | None] | None:
        """The input's dims, None where dynamic (see ``_shape_helpers.partial_ints``)."""
        ps = self.get_input_partial_shape(0)
        return None if rank_of(ps) is None else [d.get_length() if d.is_static else None for d in ps]

    def evaluate(self, inputs: list) -> list:
        return [np.array(np.shape(inputs[0]), dtype=self.output_type.to_dtype())]


@register_op
@without_attrs("output_type")  # ShapeOf-1 has no attributes in IR files
class ShapeOfV1(ShapeOf):
    """ShapeOf-1: always i64."""

    type_name, version = "ShapeOf", "opset1"


@register_op
class Size(Node):
    """ONNX Size: the number of elements of input 0 as an i64 scalar."""

    type_name, version, num_inputs = "Size", "onnx", (1, 1)

    def infer(self) -> list:
        return [(Type.i64, PartialShape([]))]

    def static_value(self) -> np.ndarray | None:
        """The output, when input 0's shape is static."""
        ps = self.get_input_partial_shape(0)
        return np.array(int(np.prod([int(d) for d in ps])), dtype=np.int64) if ps.is_static else None

    def evaluate(self, inputs: list) -> list:
        return [np.array(np.size(inputs[0]), dtype=np.int64)]
