"""The nodes a device builds from a fused chain (:class:`~.fusions.ConvChain`): the shared half of each device's
FusedConvolution / FusedMatMul. A device subclasses them with its own ``type_name`` and ``version`` (plugins never
share node classes), keeping the chain's steps for its kernels, profiling (``fused_names``) and a NumPy reference
composed from the replaced nodes.

>>> class MyFusedConv(FusedConvolutionBase):  # doctest: +SKIP
...     type_name, version = "FusedConvolution", "my_device"
>>> ConvFusion(MyFusedConv.from_chain)(model)  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from vinerun.ir.node import Attr, Node, Output
from vinerun.ops.convolution import Convolution, ConvolutionBase, GroupConvolution
from vinerun.ops.matmul import MatMul
from vinerun.transformations.fusions import ConvChain

_N = TypeVar("_N", bound="FusedChain")


@dataclass(frozen=True)
class PostOp:
    """A fused step: the original (detached) ``node``, the input the running value feeds (``position``) and
    the fused node's input holding its other operand (``input_index``, None when it has none)."""

    node: Node
    kind: str
    position: int
    input_index: int | None


class FusedChain(Node):
    """A node that ran a chain's head op and then its steps: inputs are the head's two, then the steps' operands.

    ``post_ops`` names the steps, e.g. ``"bias,sum,relu"``.
    """

    post_ops = Attr("str", "")

    @property
    def steps(self) -> tuple[PostOp, ...]:
        return self.__dict__.get("_steps", ())

    @property
    def fused_names(self) -> list[tuple[str, str]]:
        """(friendly name, type) of each op fused away after the head op."""
        return [(s.node.friendly_name, s.node.type_name) for s in self.steps]

    @classmethod
    def head_attributes(cls, head: Node) -> dict[str, Any]:
        """The attributes the fused node copies from the chain's head op."""
        raise NotImplementedError

    @classmethod
    def from_chain(cls: type[_N], chain: ConvChain) -> _N:
        head = chain.conv
        inputs: list[Output] = [head.input_value(0), head.input_value(1)]
        steps: list[PostOp] = []
        for s in chain.steps:
            index = None
            if s.operand is not None:
                index = len(inputs)
                inputs.append(s.operand)
            steps.append(PostOp(s.node, s.kind, s.position, index))
        names = [s.kind if s.kind != "activation" else s.node.type_name.lower() for s in chain.steps]
        fused = cls(inputs, name=head.friendly_name, post_ops=",".join(names), **cls.head_attributes(head))
        fused.__dict__["_steps"] = tuple(steps)
        fused.rt_info.update(head.rt_info)
        return fused

    def head_evaluate(self, inputs: list) -> np.ndarray:
        """The head op's reference on its two inputs."""
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        y = self.head_evaluate(inputs[:2])
        for s in self.steps:
            args: list[np.ndarray | None] = [None] * max(2 if s.input_index is not None else 1, s.position + 1)
            args[s.position] = y
            if s.input_index is not None:
                args[1 - s.position] = inputs[s.input_index]
            y = s.node.evaluate(args)[0]
        return [y]


class FusedConvolutionBase(FusedChain, ConvolutionBase):
    """(Group)Convolution with fused bias, activation, residual-sum, scale and shift post-ops.

    Inputs: data, filters, then the post-ops' operands in order (bias, residual, Swish beta, scale, shift).
    """

    num_inputs = (2, 8)
    conv_type = Attr("str", "Convolution")

    def _head_class(self) -> type[ConvolutionBase]:
        return GroupConvolution if self.conv_type == "GroupConvolution" else Convolution

    def groups_of_filters(self) -> tuple[Any, Any]:
        return self._head_class().groups_of_filters(self)  # type: ignore[arg-type]

    @classmethod
    def head_attributes(cls, head: Node) -> dict[str, Any]:
        names = ("strides", "pads_begin", "pads_end", "dilations", "auto_pad")
        return {"conv_type": head.type_name, **{k: getattr(head, k) for k in names}}

    def head_evaluate(self, inputs: list) -> np.ndarray:
        return self._head_class().evaluate(self, inputs)[0]  # type: ignore[arg-type]


class FusedMatMulBase(FusedChain, MatMul):
    """MatMul by a constant 2-D weight with fused bias, activation and residual-sum post-ops.

    Inputs: data, weight, then the post-ops' operands in order (bias, Swish beta, residual).
    """

    num_inputs = (2, 5)

    @classmethod
    def head_attributes(cls, head: Node) -> dict[str, Any]:
        return {"transpose_a": False, "transpose_b": head.transpose_b}

    def head_evaluate(self, inputs: list) -> np.ndarray:
        return MatMul.evaluate(self, inputs)[0]
