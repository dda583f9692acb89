"""Constant scales and shifts folded together and into the convolution before them (as OpenVINO's
LinOpSequenceFusion, ConvolutionMultiplyFusion and BatchNorm decomposition do).

Exporters leave per-channel affine steps between convolutions: an unfolded ``BatchNormalization``, or
PaddlePaddle's learnable affine blocks (``x * a + b`` with scalar ``a``, ``b`` after every convolution of
PP-LCNet / PP-OCR). Each is a pass over a whole feature map; folded, the scale goes into the convolution's
weights and the shifts into one bias that the convolution fusion takes as a post-op. Rewrites, to a fixed point:

- ``BatchNormInference(x, g, b, m, v)`` with constant parameters -> ``x * s + (b - m * s)``,
  ``s = g / sqrt(v + eps)``;
- ``(y + c1) * c2`` -> ``y * c2 + c1 * c2``; ``(y * c1) * c2`` -> ``y * (c1 * c2)``;
  ``(y + c1) + c2`` -> ``y + (c1 + c2)``;
- ``Convolution(x, W) * c`` (constant ``W``, ``c`` a scalar or per output channel) -> ``Convolution(x, W * c)``;
- ``MatMul(x, W) * c`` (constant 2-D ``W``, ``c`` a scalar or per output column) -> ``MatMul(x, W * c)``: a
  transformer's layer scale (ConvNeXt's ``gamma * x`` after its MLP; with the bias before it, by the rule above);
- ``Transpose(y) * c`` and ``Transpose(y) + c`` -> ``Transpose(y * c')``, ``Transpose(y + c')`` with ``c'`` the
  constant's axes permuted back (ConvNeXt scales after permuting its NHWC MLP output back to NCHW), where ``y``
  is a MatMul or convolution by constant weights (or one plus a constant bias), so that the rules above fold it
  there (a scale on the queries of an attention stays where the attention's fusion looks for it).

Only float values; ``c``, ``c1``, ``c2`` constants that do not broadcast ``y`` to a bigger shape (dynamic
dimensions allowed where a constant has 1), and every
rewritten intermediate read by nothing else. Results agree with the unfused graph to float rounding (the
products are reassociated).
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.transformations.fusions import _FLOATS, CONVOLUTIONS, _sole_consumer
from vinerun.transformations.pass_infra import InPlacePass, PassResult

#: rewrites per pass before giving up on a fixed point (each shortens the graph, so this is never reached)
_MAX_ROUNDS = 8


def _constant_operand(node: Node) -> tuple[Output, np.ndarray] | None:
    """(the other operand, the constant) of a binary node with one Constant input."""
    a, b = node.input_values()
    if isinstance(b.node, Constant) and not isinstance(a.node, Constant):
        return a, b.node.get_value()
    if isinstance(a.node, Constant) and not isinstance(b.node, Constant):
        return b, a.node.get_value()
    return None


def _keeps_shape(y: Output, *constants: np.ndarray) -> bool:
    """Whether ``y`` combined with each constant keeps ``y``'s shape: no broadcasting to more. ``y``'s rank must
    be known; a dynamic dimension takes only a constant's 1 there (a dynamic model's ``[?, C, ?, ?]`` feature map
    and its per-channel or scalar constants)."""
    shape = y.partial_shape
    if shape.rank.is_dynamic:
        return False
    dims = [d.get_length() if d.is_static else None for d in shape]
    for c in constants:
        cshape = np.shape(c)
        if len(cshape) > len(dims):
            return False
        for have, d in zip(reversed(dims), reversed(cshape), strict=False):  # cshape may be shorter
            if d != 1 and have != d:  # a dynamic dimension (None) might be 1 and broadcast to d
                return False
    return True


def _float(node: Node) -> bool:
    return node.get_output_element_type(0).get_type_name() in _FLOATS


def _const(value: np.ndarray, like: Output) -> Constant:
    return Constant(np.asarray(value, dtype=like.element_type.to_dtype()))


def _per_out_channel(c: np.ndarray, rank: int, channels: int) -> np.ndarray | None:
    """``c`` as ``[channels]`` when it is a scalar or a ``[1, C|1, 1, ...]`` constant (at most ``rank`` dims)."""
    c = np.asarray(c)
    if c.ndim > rank or any(d != 1 for i, d in enumerate(c.shape[::-1]) if i != rank - 2):
        return None  # a dim other than the channel axis (counted from the right) is not 1
    flat = c.reshape(-1)
    if flat.size not in (1, channels):
        return None
    return np.broadcast_to(flat, (channels,))


class LinearFolding(InPlacePass):
    """Fold constant scales and shifts (see the module docstring).

    >>> LinearFolding()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for _ in range(_MAX_ROUNDS):
            changed = False
            for node in model.get_ordered_ops():
                if node.get_output_size() == 1 and node.output(0).get_target_inputs() and _float(node):
                    changed |= self._rewrite(node)
            modified |= changed
            if not changed:
                break
        return PassResult(model, modified)

    def _rewrite(self, node: Node) -> bool:
        if node.type_name == "BatchNormInference":
            return _decompose_batch_norm(node)
        if node.type_name not in ("Multiply", "Add"):
            return False
        found = _constant_operand(node)
        if found is None:
            return False
        y, c = found
        inner = y.node
        if inner.get_output_size() != 1 or _sole_consumer(inner) is not node:
            return False
        if node.type_name == "Multiply" and inner.type_name in CONVOLUTIONS:
            return _scale_convolution(node, inner, c)
        if node.type_name == "Multiply" and inner.type_name == "MatMul":
            return _scale_matmul(node, inner, c)
        if inner.type_name == "Transpose" and _folds_into(inner.input_value(0)):
            return _before_transpose(node, inner, c)
        if inner.type_name not in ("Multiply", "Add") or not _float(inner):
            return False
        inner_found = _constant_operand(inner)
        if inner_found is None:
            return False
        x, c1 = inner_found
        if not _keeps_shape(x, c1, c) or not _keeps_shape(y, c):
            return False
        if node.type_name == inner.type_name:  # (x * c1) * c, (x + c1) + c: one constant
            folded = c1 * c if node.type_name == "Multiply" else c1 + c
            new = (Multiply if node.type_name == "Multiply" else Add)(x, _const(folded, x), name=node.friendly_name)
        elif node.type_name == "Multiply":  # (x + c1) * c = x * c + c1 * c: the scale moves towards its producer
            scaled = Multiply(x, _const(c, x), name=f"{inner.friendly_name}/scaled")
            new = Add(scaled, _const(c1 * c, x), name=node.friendly_name)
        else:
            return False  # (x * c1) + c is already in order
        replace_output_update_name(node.output(0), new.output(0))
        node.detach()
        inner.detach()
        return True


def _decompose_batch_norm(bn: Node) -> bool:
    params = [bn.const_input(i) for i in range(1, 5)]
    x = bn.input_value(0)
    rank = x.partial_shape.rank
    if any(p is None for p in params) or rank.is_dynamic or rank.get_length() < 2:
        return False
    gamma, beta, mean, var = (np.asarray(p, np.float64).reshape(-1) for p in params)
    scale = gamma / np.sqrt(var + float(bn.epsilon))  # type: ignore[attr-defined]
    shape = [1, -1] + [1] * (rank.get_length() - 2)
    scaled = Multiply(x, _const(scale.reshape(shape), x), name=f"{bn.friendly_name}/scale")
    shifted = Add(scaled, _const((beta - mean * scale).reshape(shape), x), name=bn.friendly_name)
    replace_output_update_name(bn.output(0), shifted.output(0))
    bn.detach()
    return True


def _scale_convolution(mul: Node, conv: Node, c: np.ndarray) -> bool:
    w = conv.const_input(1)
    out = conv.output(0)
    rank = out.partial_shape.rank
    if w is None or rank.is_dynamic or not np.issubdtype(np.asarray(w).dtype, np.floating):
        return False
    grouped = conv.type_name == "GroupConvolution"
    channels = w.shape[0] * w.shape[1] if grouped else w.shape[0]
    scale = _per_out_channel(c, rank.get_length(), channels)
    if scale is None or not _keeps_shape(out, c):
        return False
    if grouped:  # [G, Cout/G, Cin/G, k...]: output channel g * Cout/G + o
        factor = scale.reshape(w.shape[0], w.shape[1], *[1] * (w.ndim - 2))
    else:
        factor = scale.reshape(-1, *[1] * (w.ndim - 1))
    weights = Constant(np.asarray(w * factor, dtype=w.dtype))
    new = conv.clone_with_new_inputs([conv.input_value(0), weights.output(0)])
    new.set_friendly_name(mul.friendly_name)
    replace_output_update_name(mul.output(0), new.output(0))
    mul.detach()
    conv.detach()
    return True


def _scale_matmul(mul: Node, matmul: Node, c: np.ndarray) -> bool:
    w = matmul.const_input(1)
    out = matmul.output(0)
    if w is None or np.asarray(w).ndim != 2 or not np.issubdtype(np.asarray(w).dtype, np.floating):
        return False
    if matmul.transpose_a or not _keeps_shape(out, c):  # type: ignore[attr-defined]
        return False
    c = np.asarray(c)
    columns = w.shape[0] if matmul.transpose_b else w.shape[1]  # type: ignore[attr-defined]
    if any(d != 1 for d in c.shape[:-1]) or c.size not in (1, columns):
        return False  # not one value per output column
    scale = np.broadcast_to(c.reshape(-1), (columns,))
    scaled = w * (scale[:, None] if matmul.transpose_b else scale[None, :])  # type: ignore[attr-defined]
    new = matmul.clone_with_new_inputs([matmul.input_value(0), Constant(np.asarray(scaled, dtype=w.dtype)).output(0)])
    new.set_friendly_name(mul.friendly_name)
    replace_output_update_name(mul.output(0), new.output(0))
    mul.detach()
    matmul.detach()
    return True


def _folds_into(y: Output) -> bool:
    """Whether a scale or shift of ``y`` folds into its producer: a MatMul or convolution by constant weights,
    or one plus a constant."""
    node = y.node
    if node.type_name == "Add" and _constant_operand(node) is not None:
        node = _constant_operand(node)[0].node  # type: ignore[index]
    return (node.type_name == "MatMul" or node.type_name in CONVOLUTIONS) and node.const_input(1) is not None


def _before_transpose(node: Node, transpose: Node, c: np.ndarray) -> bool:
    """``Transpose(y) op c`` -> ``Transpose(y op c')`` (op Multiply or Add, ``c'``: ``c`` in ``y``'s axis order)."""
    order = transpose.const_input(1)
    y, out = transpose.input_value(0), transpose.output(0)
    shape = out.partial_shape
    if order is None or not shape.is_static or not _keeps_shape(out, c) or np.asarray(c).ndim > len(shape):
        return False
    rank = len(shape)
    perm = [int(a) % rank for a in np.asarray(order).reshape(-1)] or list(reversed(range(rank)))
    full = np.asarray(c).reshape((1,) * (rank - np.asarray(c).ndim) + np.asarray(c).shape)
    moved = np.transpose(full, np.argsort(perm))
    inner = (Multiply if node.type_name == "Multiply" else Add)(y, _const(moved, y), name=f"{node.friendly_name}/moved")
    new = transpose.clone_with_new_inputs([inner.output(0), transpose.input_value(1)])
    new.set_friendly_name(node.friendly_name)
    replace_output_update_name(node.output(0), new.output(0))
    node.detach()
    transpose.detach()
    return True
