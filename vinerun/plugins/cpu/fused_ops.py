"""The CPU plugin's internal ops: what its fusion passes make. Never written to IR (export_graph returns the
graph before fusion); each keeps a NumPy reference composed from the ops it replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, Output
from vinerun.ops.convolution import Convolution as _Convolution
from vinerun.ops.convolution import ConvolutionBase, GroupConvolution
from vinerun.ops.matmul import MatMul
from vinerun.transformations.fusions import ConvChain, ConvFusion
from vinerun.transformations.matmul_fusion import MatMulFusion


@dataclass(frozen=True)
class PostOp:
    """A fused step: the original (detached) ``node``, the input the running value feeds (``position``) and
    the fused node's input holding its other operand (``input_index``, None when it has none)."""

    node: Node
    kind: str
    position: int
    input_index: int | None


class FusedConvolution(ConvolutionBase):
    """(Group)Convolution with fused bias, activation and residual-sum post-ops.

    Inputs: data, filters, then the post-ops' operands in order (bias, residual, Swish beta).
    ``post_ops`` names them, e.g. ``"bias,relu"`` or ``"bias,sum,relu"``. ``algorithm``: ``"direct"``, or
    ``"winograd"`` where :class:`~.winograd_selection.WinogradSelection` chose that.

    >>> fused = FusedConvolution.from_chain(match_chain(conv))  # doctest: +SKIP
    >>> fused.post_ops
    'bias,sum,relu'
    """

    type_name, version = "FusedConvolution", "vinerun_cpu"
    num_inputs = (2, 8)
    conv_type = Attr("str", "Convolution")
    post_ops = Attr("str", "")
    algorithm = Attr("str", "direct")

    def groups_of_filters(self) -> tuple[Any, Any]:
        cls = GroupConvolution if self.conv_type == "GroupConvolution" else _Convolution
        return cls.groups_of_filters(self)  # type: ignore[arg-type]

    @property
    def steps(self) -> tuple[PostOp, ...]:
        return self.__dict__.get("_steps", ())

    @property
    def fused_names(self) -> list[tuple[str, str]]:
        """(friendly name, type) of each op fused away after the convolution."""
        return [(s.node.friendly_name, s.node.type_name) for s in self.steps]

    @classmethod
    def from_chain(cls, chain: ConvChain) -> FusedConvolution:
        conv = chain.conv
        inputs: list[Output] = [conv.input_value(0), conv.input_value(1)]
        steps: list[PostOp] = []
        for s in chain.steps:
            index = None
            if s.operand is not None:
                index = len(inputs)
                inputs.append(s.operand)
            steps.append(PostOp(s.node, s.kind, s.position, index))
        names = [s.kind if s.kind != "activation" else s.node.type_name.lower() for s in chain.steps]
        fused = cls(inputs, name=conv.friendly_name, conv_type=conv.type_name, post_ops=",".join(names),
                    **{k: getattr(conv, k) for k in ("strides", "pads_begin", "pads_end", "dilations", "auto_pad")})
        fused.__dict__["_steps"] = tuple(steps)
        fused.rt_info.update(conv.rt_info)
        return fused

    def evaluate(self, inputs: list) -> list:
        x, w = inputs[0], inputs[1]
        if self.conv_type == "GroupConvolution":
            y = GroupConvolution.evaluate(self, [x, w])[0]  # type: ignore[arg-type]
        else:
            y = _Convolution.evaluate(self, [x, w])[0]  # type: ignore[arg-type]
        for s in self.steps:
            args: list[np.ndarray | None] = [None] * max(2 if s.input_index is not None else 1, s.position + 1)
            args[s.position] = y
            if s.input_index is not None:
                args[1 - s.position] = inputs[s.input_index]
            y = s.node.evaluate(args)[0]
        return [y]


def conv_fusion() -> ConvFusion:
    """The CPU plugin's convolution fusion pass (makes :class:`FusedConvolution` nodes)."""
    return ConvFusion(FusedConvolution.from_chain)


class FusedMatMul(MatMul):
    """MatMul by a constant 2-D weight with fused bias and activation post-ops.

    Inputs: data, weight, then the post-ops' operands in order (bias, Swish beta, residual). ``post_ops`` names them,
    e.g. ``"bias,gelu"`` (empty for a bare MatMul whose weight is only prepacked).

    >>> fused = FusedMatMul.from_chain(match_matmul_chain(matmul))  # doctest: +SKIP
    >>> fused.post_ops
    'bias,relu'
    """

    type_name, version = "FusedMatMul", "vinerun_cpu"
    num_inputs = (2, 5)
    post_ops = Attr("str", "")

    @property
    def steps(self) -> tuple[PostOp, ...]:
        return self.__dict__.get("_steps", ())

    @property
    def fused_names(self) -> list[tuple[str, str]]:
        """(friendly name, type) of each op fused away after the MatMul."""
        return [(s.node.friendly_name, s.node.type_name) for s in self.steps]

    @classmethod
    def from_chain(cls, chain: ConvChain) -> FusedMatMul:
        mm = chain.conv
        inputs: list[Output] = [mm.input_value(0), mm.input_value(1)]
        steps: list[PostOp] = []
        for s in chain.steps:
            index = None
            if s.operand is not None:
                index = len(inputs)
                inputs.append(s.operand)
            steps.append(PostOp(s.node, s.kind, s.position, index))
        names = [s.kind if s.kind != "activation" else s.node.type_name.lower() for s in chain.steps]
        fused = cls(inputs, name=mm.friendly_name, transpose_a=False, transpose_b=mm.transpose_b,
                    post_ops=",".join(names))
        fused.__dict__["_steps"] = tuple(steps)
        fused.rt_info.update(mm.rt_info)
        return fused

    def evaluate(self, inputs: list) -> list:
        y = MatMul.evaluate(self, inputs[:2])[0]
        for s in self.steps:
            args: list[np.ndarray | None] = [None] * max(2 if s.input_index is not None else 1, s.position + 1)
            args[s.position] = y
            if s.input_index is not None:
                args[1 - s.position] = inputs[s.input_index]
            y = s.node.evaluate(args)[0]
        return [y]


def matmul_fusion() -> MatMulFusion:
    """The CPU plugin's MatMul fusion pass (makes :class:`FusedMatMul` nodes)."""
    return MatMulFusion(FusedMatMul.from_chain)


class FusedConvolutionDW(Node):
    """A 1x1 FusedConvolution and the 3x3 depthwise FusedConvolution that alone reads it, as one node: oneDNN
    runs the depthwise one as a post-op of the 1x1 primitive, so the expanded tensor is used while in cache
    instead of making a round trip through memory (made by :mod:`..depthwise_fusion`; static shapes only).

    Inputs: the 1x1 node's, then the depthwise node's after its data input.

    >>> fused = FusedConvolutionDW.from_pair(pointwise, depthwise)  # doctest: +SKIP
    >>> fused.depthwise_input(1)  # the depthwise filters
    """

    type_name, version = "FusedConvolutionDW", "vinerun_cpu"
    num_inputs = (3, 16)

    @classmethod
    def from_pair(cls, pointwise: FusedConvolution, depthwise: FusedConvolution) -> FusedConvolutionDW:
        fused = cls.__new__(cls)
        fused.__dict__.update(_pointwise=pointwise, _depthwise=depthwise)
        Node.__init__(fused, [*pointwise.input_values(), *depthwise.input_values()[1:]],
                      name=pointwise.friendly_name)
        fused.rt_info.update(pointwise.rt_info)
        return fused

    @property
    def pointwise(self) -> FusedConvolution:
        """The 1x1 node (detached; its input indices are this node's)."""
        return self.__dict__["_pointwise"]

    @property
    def depthwise(self) -> FusedConvolution:
        """The depthwise node (detached; its input ``i`` > 0 is this node's :meth:`depthwise_input` ``i``)."""
        return self.__dict__["_depthwise"]

    def depthwise_input(self, i: int) -> int:
        """This node's input index of the depthwise node's input ``i`` (``i`` > 0)."""
        return self.pointwise.get_input_size() + i - 1

    @property
    def fused_names(self) -> list[tuple[str, str]]:
        """(friendly name, type) of each op fused away after the 1x1 convolution, the depthwise one included."""
        dw = self.depthwise
        return [*self.pointwise.fused_names, (dw.friendly_name, dw.type_name), *dw.fused_names]

    def infer(self) -> list:
        pw, dw = self.pointwise, self.depthwise
        if self.get_input_partial_shape(0) != pw.get_input_partial_shape(0):
            raise ValidationError(f"made for input shape {pw.get_input_partial_shape(0)}, got "
                                  f"{self.get_input_partial_shape(0)} (reshape the model before fusing)")
        return [(dw.get_output_element_type(0), dw.get_output_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        split = self.pointwise.get_input_size()
        y = self.pointwise.evaluate(inputs[:split])[0]
        return self.depthwise.evaluate([y, *inputs[split:]])
