"""Weight-only compression on the CPU: MatMuls and embedding Gathers whose weight is an int8 / int4 constant
with a decompression subgraph (kept by ``common_cleanup(keep_decompression=True)``) become
:class:`CompressedMatMul` / :class:`CompressedGather`, whose kernels (:mod:`.kernels.compressed_matmul`) keep the
weight compressed (1 byte or half a byte a weight) instead of the f32 constant folding would make.

Patterns (each weight read into a :class:`~.compressed_layout.CompressedWeight` [n, k]):

- OpenVINO IR / NNCF ``compress_weights``: u8 / i8 / u4 / i4 Constant -> Convert (f16 / f32) [-> Subtract zero
  point] -> Multiply scale [-> Reshape [n, k / group, group] -> [n, k]] [-> Convert f32] -> MatMul or Gather;
- ONNX: DequantizeLinear(int8 / uint8 / int4 / uint4 constant, scale [, zero point], axis, block_size) -> MatMul
  (the other input a float activation: a MatMul of two DequantizeLinear outputs is the int8 path's).

Scales per output column (or one for all) and per group of consecutive k; a MatMul's bias (Add of a constant of n
values right after it) is taken too. What does not fit stays for ``fold_decompression`` (f32).

>>> CompressedWeights(dq_group=32)(model).modified  # doctest: +SKIP
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Attr, Node, Output
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.plugins.cpu.compressed_layout import CompressedWeight, dequantize_rows
from vinerun.properties import hint
from vinerun.transformations.decompression import LOW_PRECISION, is_decompression
from vinerun.transformations.pass_infra import InPlacePass, PassResult


class CompressedMatMul(Node):
    """``x [..., k] @ W.T (+ bias)`` for a compressed ``W`` [n, k] in the CPU's packed layout.

    Inputs: x (f32), packed weights (u8), scales and zero points (f32 ``[panels, k / group, 16]``), optional bias
    (f32 [n]). ``dq_group``: DYNAMIC_QUANTIZATION_GROUP_SIZE at compile time (0: activations stay f32).
    """

    type_name, version, num_inputs = "CompressedMatMul", "vinerun_cpu", (4, 5)
    n = Attr("int")
    k = Attr("int")
    group = Attr("int")
    bits = Attr("int")
    dq_group = Attr("int", 0)

    def infer(self) -> list:
        x = self.get_input_partial_shape(0)
        if x.rank.is_static and x[-1].is_static and int(x[-1]) != self.k:
            raise ValidationError(f"input 0 has {x[-1]} columns, the weight {self.k}")
        out = PartialShape([*list(x)[:-1], self.n]) if x.rank.is_static else PartialShape.dynamic()
        return [(self.get_input_element_type(0), out)]

    def evaluate(self, inputs: list) -> list:
        w = dequantize_rows(inputs[1], inputs[2], inputs[3], self.bits, self.k, np.arange(self.n))
        y = np.matmul(np.asarray(inputs[0], np.float32), w.T)
        if len(inputs) > 4:
            y = y + np.asarray(inputs[4], np.float32).reshape(-1)
        return [y.astype(inputs[0].dtype)]


class CompressedGather(Node):
    """Rows of a compressed embedding table [n, k] (Gather on axis 0): inputs packed weights, scales, zero points
    (as :class:`CompressedMatMul`'s), then the indices."""

    type_name, version, num_inputs = "CompressedGather", "vinerun_cpu", (4, 4)
    n = Attr("int")
    k = Attr("int")
    group = Attr("int")
    bits = Attr("int")

    def infer(self) -> list:
        idx = self.get_input_partial_shape(3)
        out = PartialShape([*list(idx), self.k]) if idx.rank.is_static else PartialShape.dynamic()
        return [(Type.f32, out)]

    def evaluate(self, inputs: list) -> list:
        ids = np.asarray(inputs[3]).astype(np.int64)
        ids = np.where(ids < 0, ids + self.n, ids)
        bad = (ids < 0) | (ids >= self.n)
        y = dequantize_rows(inputs[0], inputs[1], inputs[2], self.bits, self.k, np.where(bad, 0, ids))
        y[bad] = 0.0
        return [y]


def _value(out: Output, limit: int = 1 << 22) -> np.ndarray | None:
    """The value of a small constant subgraph (a scale through a Convert), or None."""
    node = out.node
    if isinstance(node, Constant):
        return node.get_value()
    shape = out.get_partial_shape()
    if not shape.is_static or math.prod(int(d) for d in shape.to_shape()) > limit or node.get_input_size() == 0:
        return None
    args = [_value(v, limit) for v in node.input_values()]
    if any(a is None for a in args):
        return None
    return node.evaluate(args)[out.get_index()]


def _skip_float_converts(v: Output) -> Output:
    while v.node.type_name == "Convert" and v.node.input_value(0).element_type.is_real():
        v = v.node.input_value(0)
    return v


def _integer_constant(v: Output) -> Constant | None:
    """The low-precision Constant behind a Convert to float (``v`` is that Convert), or None."""
    if v.node.type_name != "Convert":
        return None
    source = v.node.input_value(0)
    return source.node if isinstance(source.node, Constant) and source.element_type in LOW_PRECISION else None


def _read_openvino(v: Output) -> tuple[Constant, np.ndarray, np.ndarray | None] | None:
    """(integer constant, scale, zero point) of Convert -> [Subtract] -> Multiply, or None."""
    if v.node.type_name != "Multiply":
        return None
    a, b = v.node.input_values()
    sizes = [math.prod(int(d) for d in o.get_partial_shape().to_shape()) if o.get_partial_shape().is_static
             else -1 for o in (a, b)]
    data, scale_out = (a, b) if sizes[0] >= sizes[1] else (b, a)
    scale = _value(scale_out)
    data, zp = _skip_float_converts(data), None
    if data.node.type_name == "Subtract":
        zp = _value(data.node.input_value(1))
        if zp is None:
            return None
        data = _skip_float_converts(data.node.input_value(0))
    q = _integer_constant(data)
    return None if q is None or scale is None else (q, scale, zp)


def _read_onnx(node: Node) -> tuple[Constant, np.ndarray, np.ndarray | None, tuple[int, ...]] | None:
    """(integer constant, scale, zero point, the shape they apply to) of a DequantizeLinear, or None."""
    q = node.input_value(0).node
    if not isinstance(q, Constant) or q.get_output_element_type(0) not in LOW_PRECISION:
        return None
    shape = tuple(int(d) for d in q.get_output_partial_shape(0).to_shape())
    scale = _value(node.input_value(1))
    zp = _value(node.input_value(2)) if node.get_input_size() > 2 else None
    if scale is None or len(shape) != 2:
        return None
    axis = node.axis % 2  # type: ignore[attr-defined]
    bs = node.block_size  # type: ignore[attr-defined]
    if scale.ndim == 0:
        return q, scale, zp, shape
    if bs > 0:  # blocked: [K / bs, N] along axis 0 -> the values as [K / bs, bs, N]
        if shape[axis] % bs or scale.shape[axis] != shape[axis] // bs:
            return None
        split = (*shape[:axis], shape[axis] // bs, bs, *shape[axis + 1:])
        params = [None if p is None else np.expand_dims(p, axis + 1) for p in (scale, zp)]
        return q, params[0], params[1], split  # type: ignore[return-value]
    along = [1, 1]
    along[axis] = -1
    return q, scale.reshape(along), None if zp is None else zp.reshape(along), shape


def read_weight(v: Output, k_axis: int) -> CompressedWeight | None:
    """The compressed weight behind the float 2-D weight ``v`` whose axis ``k_axis`` is the reduction (k) axis,
    as [n, k] with per-(column, group) parameters, or None where it is no pattern the kernels take."""
    v = _skip_float_converts(v)
    target = v.get_partial_shape()
    if not target.is_static or len(target) != 2:
        return None
    target_shape = tuple(int(d) for d in target.to_shape())
    if v.node.type_name == "Reshape":
        v = _skip_float_converts(v.node.input_value(0))
    if v.node.type_name == "DequantizeLinear":
        found = _read_onnx(v.node)
        if found is None:
            return None
        q_node, scale, zp, shape = found
    else:
        read = _read_openvino(v)
        if read is None:
            return None
        q_node, scale, zp = read
        shape = tuple(int(d) for d in q_node.get_output_partial_shape(0).to_shape())
    et = q_node.get_output_element_type(0)
    q = q_node.get_value().reshape(shape)
    return _normalize(q, scale, zp, target_shape, k_axis, et)


def _normalize(q: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, target: tuple[int, ...], k_axis: int,
               et: Type) -> CompressedWeight | None:
    """``q`` (shape S, viewed as ``target`` [2-D]) with broadcastable ``scale`` / ``zp`` as [n, k] + [n, groups]."""
    shape = q.shape
    split = next((i for i in range(len(shape) + 1) if math.prod(shape[:i]) == target[0]), None)
    if split is None or math.prod(shape[split:]) != target[1]:
        return None
    sides = [list(range(split)), list(range(split, len(shape)))]
    k_axes, n_axes = sides[k_axis], sides[1 - k_axis]
    if len(n_axes) != 1 or len(k_axes) not in (1, 2):
        return None
    params = []
    per_param = list(shape)
    per_param[k_axes[-1]] = 1  # one value per group: the innermost k axis is the group
    for p in (scale, zp):
        if p is None:
            params.append(None)
            continue
        p = np.asarray(p, np.float32)
        if p.ndim > len(shape):
            return None
        p = p.reshape((1,) * (len(shape) - p.ndim) + p.shape)
        if p.shape[k_axes[-1]] != 1:
            return None  # a scale per k: no groups to take
        try:
            p = np.broadcast_to(p, per_param)
        except ValueError:
            return None
        params.append(p.transpose(n_axes + k_axes).reshape(shape[n_axes[0]], -1))
    n = shape[n_axes[0]]
    weight = q.transpose(n_axes + k_axes).reshape(n, -1)
    bits = 4 if et in (Type.i4, Type.u4) else 8
    cw = CompressedWeight(weight, params[0], params[1], bits, et in (Type.i4, Type.i8))
    step = 8 if bits == 4 else 4
    return cw if cw.q.shape[1] % step == 0 and cw.group % step == 0 else None


def _bias(matmul: Node, n: int) -> tuple[Node, np.ndarray] | None:
    """The Add of a constant [n] right after ``matmul`` (its only reader), with the values, or None."""
    targets = list(matmul.output(0).get_target_inputs())
    if len(targets) != 1 or targets[0].get_node().type_name != "Add":
        return None
    add = targets[0].get_node()
    other = add.input_value(1 - targets[0].get_index())
    if not isinstance(other.node, Constant) or add.get_output_partial_shape(0) != matmul.get_output_partial_shape(0):
        return None
    b = other.node.get_value()
    return (add, b.reshape(-1).astype(np.float32)) if b.size == n and b.shape[-1] == n else None


class CompressedWeights(InPlacePass):
    """Replace MatMuls (f32 activations) and axis-0 Gathers by compressed int8 / int4 weights with
    :class:`CompressedMatMul` / :class:`CompressedGather` (``dq_group``: DYNAMIC_QUANTIZATION_GROUP_SIZE)."""

    def __init__(self, dq_group: int = 0):
        self.dq_group = dq_group

    def call(self, model: Model) -> PassResult:
        packed: dict[Any, tuple[list[Output], CompressedWeight]] = {}  # a weight read by a Gather and a MatMul
        modified = False
        for node in model.get_ordered_ops():
            if node.type_name == "MatMul":
                modified |= self._matmul(node, packed)
            elif node.type_name == "Gather":
                modified |= self._gather(node, packed)
        return PassResult(model, modified)

    def _weight(self, v: Output, k_axis: int, cache: dict) -> tuple[list[Output], CompressedWeight] | None:
        key = (id(v.node), v.get_index(), k_axis)
        if key not in cache:
            cw = read_weight(v, k_axis) if is_decompression(v.node) else None
            cache[key] = None if cw is None else ([Constant(a).output(0) for a in cw.packed()], cw)
        return cache[key]

    def _matmul(self, node: Node, cache: dict) -> bool:
        x = node.input_value(0)
        if (node.transpose_a or x.element_type != Type.f32 or is_decompression(x.node)  # type: ignore[attr-defined]
                or isinstance(x.node, Constant) or not x.get_partial_shape().rank.is_static
                or len(node.get_input_partial_shape(1)) != 2):
            return False
        found = self._weight(node.input_value(1), 1 if node.transpose_b else 0, cache)  # type: ignore[attr-defined]
        if found is None:
            return False
        consts, cw = found
        n, k = cw.q.shape
        bias = _bias(node, n)
        inputs = [x, *consts] + ([Constant(bias[1]).output(0)] if bias else [])
        fused = CompressedMatMul(inputs, name=node.friendly_name, n=n, k=k, group=cw.group, bits=cw.bits,
                                 dq_group=self.dq_group)
        fused.rt_info.update(node.rt_info)
        last = bias[0] if bias else node
        replace_output_update_name(last.output(0), fused.output(0))
        return True

    def _gather(self, node: Node, cache: dict) -> bool:
        axis = _value(node.input_value(2))
        if (axis is None or np.asarray(axis).size != 1 or int(np.asarray(axis).reshape(-1)[0]) != 0
                or node.batch_dims != 0  # type: ignore[attr-defined]
                or node.get_output_element_type(0) != Type.f32):
            return False
        found = self._weight(node.input_value(0), 1, cache)
        if found is None:
            return False
        consts, cw = found
        n, k = cw.q.shape
        fused = CompressedGather([*consts, node.input_value(1)], name=node.friendly_name, n=n, k=k, group=cw.group,
                                 bits=cw.bits)
        fused.rt_info.update(node.rt_info)
        replace_output_update_name(node.output(0), fused.output(0))
        return True


def compress_weight_ops(model: Model, dq_group: int) -> None:
    """The CPU's weight-only compression pass on ``model`` (in place; see :class:`CompressedWeights`)."""
    CompressedWeights(dq_group).run(model, check_graph=False)


def dynamic_quantization_group(values: Any) -> int:
    """``DYNAMIC_QUANTIZATION_GROUP_SIZE`` in effect (as OpenVINO's CPU plugin: 0 under
    ``EXECUTION_MODE_HINT=ACCURACY`` unless set explicitly)."""
    accuracy = values.get("EXECUTION_MODE_HINT") == hint.ExecutionMode.ACCURACY
    if accuracy and not values.is_set("DYNAMIC_QUANTIZATION_GROUP_SIZE"):
        return 0
    return int(values.get("DYNAMIC_QUANTIZATION_GROUP_SIZE"))
