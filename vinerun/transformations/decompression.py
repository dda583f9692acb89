"""Weight decompression subgraphs: low-precision constants and the ops that turn them back into floats.

Quantized and weight-compressed models store weights as integer constants followed by a dequantization:
``DequantizeLinear(int8 constant, scale[, zero point])`` (ONNX QDQ), ``Convert -> [Subtract] -> Multiply
[-> Reshape]`` on a u8 / i8 / u4 / i4 constant (OpenVINO IR, NNCF's compressed weights) or ``FakeQuantize`` on
an f32 constant (NNCF's quantized weights). Folding those into f32 constants, as the common cleanup does
everywhere else, throws away what an int8 kernel needs (the integer values and their scales), so a device
with such kernels asks the cleanup to keep them (:func:`keeps_decompression`), matches them, and folds what
its kernels did not take afterwards (OpenVINO's ``disable_const_folding`` marks on dequantization subgraphs).

>>> ConstantFolding(keep=is_decompression)(model)  # doctest: +SKIP
"""

from __future__ import annotations

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output
from vinerun.ir.types import Type

#: integer element types a weight is compressed to
LOW_PRECISION = {Type.i8, Type.u8, Type.i4, Type.u4}


def _low_precision_constant(value: Output) -> bool:
    return isinstance(value.node, Constant) and value.element_type in LOW_PRECISION


def _constant(value: Output) -> bool:
    node = value.node
    if isinstance(node, Constant):
        return True
    # a zero point or scale may come through a Convert (u8 zero point -> f32) or a Reshape of a constant
    return node.type_name in ("Convert", "Reshape", "Unsqueeze") and _constant(node.input_value(0))


def _decompressed(value: Output) -> bool:
    """Whether ``value`` is the output of a kept decompression op."""
    return is_decompression(value.node)


def is_decompression(node: Node) -> bool:
    """Whether ``node`` belongs to a weight decompression subgraph (kept by constant folding where asked)."""
    t = node.type_name
    if t == "DequantizeLinear":
        return _low_precision_constant(node.input_value(0)) or _decompressed(node.input_value(0))
    if t == "Convert":
        source = node.input_value(0)
        return (_low_precision_constant(source) or _decompressed(source)) and node.get_output_element_type(0).is_real()
    if t == "FakeQuantize":
        return isinstance(node.input_value(0).node, Constant) and all(
            _constant(node.input_value(i)) for i in range(1, 5))
    if t in ("Subtract", "Multiply"):
        return _decompressed(node.input_value(0)) and _constant(node.input_value(1))
    if t == "Reshape":  # group-wise scales: [out, in / group, group] back to [out, in]
        return node.input_value(0).node.type_name == "Multiply" and _decompressed(node.input_value(0)) and \
            _constant(node.input_value(1))
    return False
