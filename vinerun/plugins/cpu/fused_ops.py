"""The CPU plugin's internal ops: what its fusion passes make. Never written to IR (export_graph returns the
graph before fusion); each keeps a NumPy reference composed from the ops it replaced.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter
from vinerun.ir.node import Attr, Node
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops.gather import GatherND
from vinerun.ops.topk_unique import NonZero, stable_order
from vinerun.transformations.fused_chain import FusedConvolutionBase, FusedMatMulBase
from vinerun.transformations.fusions import ConvFusion
from vinerun.transformations.matmul_fusion import MatMulFusion


class FusedConvolution(FusedConvolutionBase):
    """(Group)Convolution with fused bias, activation and residual-sum post-ops.

    Inputs: data, filters, then the post-ops' operands in order (bias, residual, Swish beta).
    ``post_ops`` names them, e.g. ``"bias,relu"`` or ``"bias,sum,relu"``. ``algorithm``: ``"direct"``, or
    ``"winograd"`` where :class:`~.winograd_selection.WinogradSelection` chose that.

    >>> fused = FusedConvolution.from_chain(match_chain(conv))  # doctest: +SKIP
    >>> fused.post_ops
    'bias,sum,relu'
    """

    type_name, version = "FusedConvolution", "vinerun_cpu"
    algorithm = Attr("str", "direct")


def conv_fusion() -> ConvFusion:
    """The CPU plugin's convolution fusion pass (makes :class:`FusedConvolution` nodes)."""
    return ConvFusion(FusedConvolution.from_chain)


class FusedMatMul(FusedMatMulBase):
    """MatMul by a constant 2-D weight with fused bias and activation post-ops.

    Inputs: data, weight, then the post-ops' operands in order (bias, Swish beta, residual). ``post_ops`` names them,
    e.g. ``"bias,gelu"`` (empty for a bare MatMul whose weight is only prepacked).

    >>> fused = FusedMatMul.from_chain(match_matmul_chain(matmul))  # doctest: +SKIP
    >>> fused.post_ops
    'bias,relu'
    """

    type_name, version = "FusedMatMul", "vinerun_cpu"


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


class MaskedGather(Node):
    """``data[mask]``, as PyTorch exports it: ``GatherND(data, Transpose(NonZero(mask), [1, 0]))`` (made by
    :mod:`..masked_gather`). The elements (or slices) of ``data`` where ``mask`` (of rank r >= 1, covering the
    first r axes of ``data``) is non-zero, in row-major order: output ``[count, *data.shape[r:]]``.

    >>> MaskedGather(data, mask).get_output_partial_shape(0)  # doctest: +SKIP
    <PartialShape: [?,4]>
    """

    type_name, version, num_inputs = "MaskedGather", "vinerun_cpu", (2, 2)

    def infer(self) -> list:
        data, mask = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if mask.rank.is_dynamic or mask.rank.get_length() == 0:
            raise ValidationError(f"the mask must have a static rank of at least 1, got {mask}")
        r = mask.rank.get_length()
        if data.rank.is_dynamic:
            return [(self.get_input_element_type(0), PartialShape.dynamic())]
        if data.rank.get_length() < r:
            raise ValidationError(f"a mask of rank {r} cannot index data {data}")
        return [(self.get_input_element_type(0), PartialShape([Dimension(), *list(data)[r:]]))]

    def evaluate(self, inputs: list) -> list:
        data, mask = inputs
        indices = np.ascontiguousarray(NonZero(Parameter(self.get_input_element_type(1), mask.shape))
                                       .evaluate([mask])[0].T)
        return GatherND(Parameter(self.get_input_element_type(0), data.shape), Parameter(Type.i64, indices.shape))\
            .evaluate([data, indices])


class FusedScaleShift(Node):
    """``activation(x * scale + shift)``: a BatchNorm (or any per-channel affine) that no convolution before it
    could take, with the ReLU after it (made by :mod:`..scale_shift_fusion`). ``scale`` and ``shift`` are
    constants that broadcast ``x`` to nothing bigger; ``activation`` is ``""`` or ``"relu"``.

    >>> FusedScaleShift(x, scale, shift, activation="relu").get_output_partial_shape(0)  # doctest: +SKIP
    <PartialShape: [1,64,56,56]>
    """

    type_name, version, num_inputs = "FusedScaleShift", "vinerun_cpu", (3, 3)
    activation = Attr("str", "")

    def infer(self) -> list:
        if self.activation not in ("", "relu"):
            raise ValidationError(f"activation must be '' or 'relu', got {self.activation!r}")
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x, scale, shift = inputs
        y = (x * scale + shift).astype(x.dtype)
        return [np.maximum(y, 0).astype(x.dtype) if self.activation == "relu" else y]


class ClassTopK(Node):
    """Per-class score selection as detection heads write it, for every class at once (made by
    :mod:`..class_topk`): for each column ``c`` of ``scores [N, C]`` named in ``columns``, the scores above
    ``threshold``, the best ``min(k, count)`` of them (by score, ties by the lower row), their rows of ``boxes``
    and ``labels[c]`` for each; the classes' results concatenated in ``columns`` order.

    Outputs: the scores ``[M]``, the boxes ``[M, *boxes.shape[1:]]`` and the labels ``[M]`` (``label_type``).

    >>> ClassTopK(scores, boxes, columns=[1, 2], labels=[1, 2], threshold=0.01, k=20).get_output_size()
    ... # doctest: +SKIP
    3
    """

    type_name, version, num_inputs, num_outputs = "ClassTopK", "vinerun_cpu", (2, 2), 3
    columns = Attr("ints")
    labels = Attr("ints")
    threshold = Attr("float")
    k = Attr("int")
    label_type = Attr("str", "i64")

    def infer(self) -> list:
        scores, boxes = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if scores.rank.is_dynamic or scores.rank.get_length() != 2 or len(self.columns) != len(self.labels):
            raise ValidationError(f"ClassTopK takes [N, C] scores and one label per column, got {scores}, "
                                  f"{len(self.columns)} columns and {len(self.labels)} labels")
        box_shape = PartialShape.dynamic() if boxes.rank.is_dynamic else PartialShape([Dimension(), *list(boxes)[1:]])
        return [(self.get_input_element_type(0), PartialShape([Dimension()])),
                (self.get_input_element_type(1), box_shape),
                (Type(self.label_type), PartialShape([Dimension()]))]

    def evaluate(self, inputs: list) -> list:
        scores, boxes = inputs
        parts: list[list[np.ndarray]] = [[], [], []]
        for column, label in zip(self.columns, self.labels, strict=True):
            s = scores[:, column]
            keep = s > np.asarray(self.threshold, s.dtype)
            chosen = s[keep]
            order = stable_order(chosen, 0, True)[:min(self.k, chosen.size)]
            parts[0].append(chosen[order])
            parts[1].append(boxes[keep][order])
            parts[2].append(np.full(order.size, label, Type(self.label_type).to_dtype()))
        return [np.concatenate(p) for p in parts]
