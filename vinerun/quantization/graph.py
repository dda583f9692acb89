"""What the quantization passes need to know about a graph: which tensors are activations, the values of
constant subgraphs, and where the weights of a linear op are.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 4], ov.Type.f32, name="x")
>>> mm = ov.opset1.matmul(x, np.ones((4, 2), np.float32), False, False)
>>> info = GraphInfo(ov.Model([mm], [x]))
>>> info.is_activation(x.output(0)), info.weight_port(mm)
(True, 1)
"""

from __future__ import annotations

import numpy as np

from vinerun.ir import Model, Node, Output

#: ops whose weights (a constant input) are quantized per output channel
LINEAR_OPS = {"Convolution", "GroupConvolution", "ConvolutionBackpropData", "GroupConvolutionBackpropData",
              "MatMul"}
#: ops that only read the shape of their input (their input is no activation for them)
SHAPE_READERS = {"ShapeOf"}


class GraphInfo:
    """Facts about one model, computed once: activation tensors and constant values (cached)."""

    def __init__(self, model: Model):
        self.model = model
        self.ops = model.get_ordered_ops()
        self._dynamic: set[tuple[int, int]] = set()
        for node in self.ops:
            if node.type_name == "Parameter" or (
                    node.type_name not in SHAPE_READERS | {"Constant"}
                    and any(o is not None and _key(o) in self._dynamic for o in node.input_values())):
                self._dynamic.update(_key(o) for o in node.outputs())
        self._values: dict[tuple[int, int], np.ndarray] = {}

    def is_dynamic(self, out: Output) -> bool:
        """The tensor depends on a model input (through data, not through a ShapeOf)."""
        return _key(out) in self._dynamic

    def is_activation(self, out: Output) -> bool:
        """A floating-point tensor computed from the model inputs."""
        return self.is_dynamic(out) and out.element_type.is_real()

    def const_value(self, out: Output) -> np.ndarray | None:
        """The value of a tensor computed from constants only (``Constant -> Convert -> Reshape``...), else None."""
        if self.is_dynamic(out):
            return None
        key = _key(out)
        if key not in self._values:
            node = out.node
            if node.type_name == "Constant":
                self._values[key] = np.asarray(node.get_value())
            else:
                args = [self.const_value(o) for o in node.input_values()]
                if any(a is None for a in args):
                    return None
                for o, value in zip(node.outputs(), node.evaluate(args), strict=True):
                    self._values[_key(o)] = np.asarray(value)
        return self._values[key]

    def weight_port(self, node: Node) -> int | None:
        """The input of a linear op that holds constant float weights (None: no constant weights)."""
        if node.type_name not in LINEAR_OPS:
            return None
        ports = [1] if node.type_name != "MatMul" else [1, 0]
        for p in ports:
            src = node.input_value(p)
            if not self.is_dynamic(src) and src.element_type.is_real() and self.is_dynamic(node.input_value(1 - p)):
                return p
        return None

    def consumers(self, out: Output) -> list[tuple[Node, int]]:
        """``(node, input index)`` of every reader of ``out``."""
        return [(i.get_node(), i.get_index()) for i in out.get_target_inputs()]


def weight_channel_axes(node: Node, port: int, rank: int) -> tuple[int, ...]:
    """The axes of a weight tensor that are kept per channel (the output channels, and MatMul's batch axes).

    >>> weight_channel_axes(type("N", (), {"type_name": "Convolution"})(), 1, 4)
    (0,)
    """
    kind = node.type_name
    if kind == "Convolution":
        return (0,)
    if kind == "GroupConvolution":
        return (0, 1)
    if kind == "ConvolutionBackpropData":
        return (1,)
    if kind == "GroupConvolutionBackpropData":
        return (0, 2)
    if rank < 2:
        return ()
    # MatMul: keep N (the non-reduced axis) and the batch axes; reduce K
    transpose = node.transpose_b if port == 1 else node.transpose_a
    reduced = (rank - 1 if transpose else rank - 2) if port == 1 else (rank - 2 if transpose else rank - 1)
    return tuple(a for a in range(rank) if a != reduced)


def _key(out: Output) -> tuple[int, int]:
    return (id(out.node), out.index)
