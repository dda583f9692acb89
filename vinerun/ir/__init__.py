"""The graph representation: types, shapes, tensors, nodes and models."""

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.layout import Layout
from vinerun.ir.model import Model, topological_order
from vinerun.ir.node import Attr, Input, Node, Output, as_output, broadcast_shapes
from vinerun.ir.registry import get_op_class, register_op
from vinerun.ir.shape import Dimension, PartialShape, Shape, as_partial_shape
from vinerun.ir.tensor import Tensor
from vinerun.ir.types import Type

__all__ = ["Attr", "Constant", "Dimension", "Input", "Layout", "Model", "Node", "Output", "Parameter",
           "PartialShape", "Result", "Shape", "Tensor", "Type", "as_output", "as_partial_shape",
           "broadcast_shapes", "get_op_class", "register_op", "topological_order"]
