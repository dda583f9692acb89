"""No-op nodes out of the graph: a ``Convert`` to the element type its input already has, a ``Slice`` that keeps
every element, a ``Squeeze`` that removes exactly the axes the ``Unsqueeze`` before it added, and a ``Multiply`` or
``Divide`` by a constant 1 or an ``Add`` or ``Subtract`` of a constant 0 that broadcasts nothing (torch's export of
``scaled_dot_product_attention`` multiplies q and k^T by ``sqrt(scale)``, 1.0 when the model scaled q itself as
Whisper does: left in, they hid the attention from its fusion).

Exporters write casts that do nothing once the model runs in one precision (transformers' eager attention casts
the softmax to the value's type, ``attn_weights.to(value.dtype)``). The CPU runs such a Convert as a view, but
in the graph it still stands between the ops a fusion matches (a Softmax and its MatMul). Its readers are
given its input instead; its tensor names move to that input.

Converters from other frameworks write the other two: TensorFlow's ``strided_slice`` over a whole tensor becomes
a Slice from 0 to ``INT_MAX`` on every axis, and a convolution written as 2-D over a width of 1 is followed by
a Squeeze of that axis (magika's ``Conv -> Slice(all) -> Squeeze -> Add(bias) -> GELU``; once the convolution is
1-D, :mod:`.conv_squeeze` puts an Unsqueeze before that Squeeze). Removed, the bias and the activation reach
the convolution's fusion. PyTorch exports ``torch.cat`` of a one-tensor list as a Concat of one input.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Parameter
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.transformations.fusions import _FLOATS
from vinerun.transformations.pass_infra import InPlacePass, PassResult


class _NoOpElimination(InPlacePass):
    """Bypass each node :meth:`passes_through` names: its readers get the output it returns, and the nodes it
    lists (left without readers) are detached with the node."""

    def passes_through(self, node: Node) -> tuple[Output, list[Node]] | None:
        raise NotImplementedError

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if not node.output(0).get_target_inputs():
                continue
            found = self.passes_through(node)
            if found is not None and _bypass(node, found[0]):
                for gone in found[1]:
                    gone.detach()
                modified = True
        return PassResult(model, modified)


class IdentityConvertElimination(_NoOpElimination):
    """Remove each Convert whose destination type is its input's type.

    >>> IdentityConvertElimination()(model).modified
    True
    """

    def passes_through(self, node: Node) -> tuple[Output, list[Node]] | None:
        if node.type_name != "Convert":
            return None
        source = node.input_value(0)
        same = source.element_type == node.get_output_element_type(0) and source.element_type.is_static()
        return (source, []) if same else None


def _bypass(node: Node, source: Output) -> bool:
    """Give ``node``'s readers ``source`` (the node is a no-op), unless that would merge a model input's name with
    a named tensor's; returns whether it did."""
    if isinstance(source.node, Parameter) and node.output(0).get_names():
        return False
    replace_output_update_name(node.output(0), source)
    node.detach()
    return True


def slice_keeps_everything(node: Node) -> bool:
    """Whether ``node`` is a Slice (opset8) with constant inputs that selects every element: step 1, start 0 and a
    stop at or past each sliced axis's end (a static size, or ``2**31 - 1`` and more where it is dynamic)."""
    if node.type_name != "Slice" or node.get_input_size() < 4:
        return False
    values = [node.const_input(i) for i in range(1, node.get_input_size())]
    shape = node.get_input_partial_shape(0)
    if any(v is None for v in values) or shape.rank.is_dynamic:
        return False
    start, stop, step = (np.asarray(v, np.int64).reshape(-1) for v in values[:3])
    rank = shape.rank.get_length()
    axes = np.asarray(values[3], np.int64).reshape(-1) % rank if len(values) > 3 else np.arange(len(start))
    for axis, b, e, st in zip(axes, start, stop, step, strict=True):
        dim = shape[int(axis)]
        end = dim.get_length() if dim.is_static else 2**31 - 1
        if st != 1 or b != 0 or e < end:
            return False
    return True


def squeeze_undoes_unsqueeze(node: Node) -> bool:
    """Whether ``node`` is a Squeeze of exactly the constant axes the Unsqueeze it reads added (and nothing else
    reads that Unsqueeze)."""
    if node.type_name != "Squeeze" or node.get_input_size() != 2:
        return False
    before = node.input_value(0).node
    if before.type_name != "Unsqueeze" or len(before.output(0).get_target_inputs()) != 1:
        return False
    rank = node.get_input_partial_shape(0).rank
    squeezed, added = node.const_input(1), before.const_input(1)
    if squeezed is None or added is None or rank.is_dynamic:
        return False
    r = rank.get_length()
    return sorted(int(a) % r for a in np.asarray(squeezed).reshape(-1)) == sorted(
        int(a) % r for a in np.asarray(added).reshape(-1))


class IdentityShapeElimination(_NoOpElimination):
    """Remove each Slice that keeps every element, each Squeeze / Unsqueeze pair that gives back its input, and
    each Concat of a single input (torchvision's DenseNet joins its first layer's input list of one: left in, it
    ran as a copy from Python between native segments, and the next convolution re-laid the copy out).

    >>> IdentityShapeElimination()(model).modified
    True
    """

    def passes_through(self, node: Node) -> tuple[Output, list[Node]] | None:
        if slice_keeps_everything(node) or (node.type_name == "Concat" and node.get_input_size() == 1):
            return node.input_value(0), []
        if squeeze_undoes_unsqueeze(node):
            unsqueeze = node.input_value(0).node
            return unsqueeze.input_value(0), [unsqueeze]  # the Squeeze was its only reader
        return None


def reshape_keeps_shape(node: Node) -> bool:
    """Whether ``node`` is a Reshape whose static output shape is its input's (exporters write them where the
    target shape was computed from the tensor's own shape: BERT's attention output before its head merge)."""
    if node.type_name != "Reshape":
        return False
    before, after = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    return before.is_static and after.is_static and before == after \
        and node.get_input_element_type(0) == node.get_output_element_type(0)


class IdentityReshapeElimination(_NoOpElimination):
    """Remove each Reshape to the (static) shape its input already has.

    Left in, one stands between a fused op and what the fusion takes in after it: transformers' BERT reshapes the
    attention's output [B, H, S, D] to [B, H, S, D] before the Transpose and Reshape of its head merge.

    >>> IdentityReshapeElimination()(model).modified
    True
    """

    def passes_through(self, node: Node) -> tuple[Output, list[Node]] | None:
        return (node.input_value(0), []) if reshape_keeps_shape(node) else None


#: (op, the constant that makes it a no-op, whether that constant may be the first operand)
_NEUTRAL = {"Multiply": (1.0, True), "Divide": (1.0, False), "Add": (0.0, True), "Subtract": (0.0, False)}


def neutral_operand(node: Node) -> Output | None:
    """The operand ``node`` passes through unchanged when it is an arithmetic no-op (see the module docstring)."""
    if node.type_name not in _NEUTRAL or node.get_output_element_type(0).get_type_name() not in _FLOATS:
        return None
    neutral, either = _NEUTRAL[node.type_name]
    pairs = [(0, 1), (1, 0)] if either else [(0, 1)]
    for keep, const in pairs:
        value = node.const_input(const)
        kept = node.input_value(keep)
        if (value is not None and np.all(np.asarray(value) == neutral) and np.asarray(value).size >= 1
                and kept.partial_shape == node.get_output_partial_shape(0)
                and kept.element_type == node.get_output_element_type(0)):
            return kept
    return None


class IdentityArithmeticElimination(_NoOpElimination):
    """Remove each ``x * 1``, ``x / 1``, ``x + 0``, ``x - 0`` whose constant broadcasts ``x`` to nothing bigger.

    >>> IdentityArithmeticElimination()(model).modified
    True
    """

    def passes_through(self, node: Node) -> tuple[Output, list[Node]] | None:
        kept = neutral_operand(node)
        return None if kept is None else (kept, [])
