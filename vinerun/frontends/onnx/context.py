"""What a translator sees of one ONNX node: its inputs, attributes, opset and subgraphs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import onnx
from onnx import numpy_helper
from vinerun.errors import UnsupportedOpError, ValidationError
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output

if TYPE_CHECKING:
    from vinerun.frontends.onnx.converter import GraphConverter, Subgraph

_MISSING = object()


class NodeContext:
    """One ONNX node being translated.

    ``inputs`` holds an ``Output`` per ONNX input (``None`` where an optional input is empty).
    """

    def __init__(self, converter: GraphConverter, node: onnx.NodeProto, inputs: list[Output | None], opset: int):
        self.converter = converter
        self.node = node
        self.inputs = inputs
        self.opset = opset
        self.op_type = node.op_type
        self.domain = node.domain or "ai.onnx"
        self.name = node.name or (node.output[0] if node.output else node.op_type)
        self._attrs = {a.name: a for a in node.attribute}

    # --- inputs ------------------------------------------------------------------------
    def input(self, i: int) -> Output:
        """Input ``i``; raises naming the node if it is absent."""
        if i >= len(self.inputs) or self.inputs[i] is None:
            raise ValidationError(f"ONNX node '{self.name}' ({self.op_type}) needs input {i}")
        return self.inputs[i]  # type: ignore[return-value]

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def optional_input(self, i: int) -> Output | None:
        return self.inputs[i] if self.has_input(i) else None

    def const_value(self, i: int) -> np.ndarray | None:
        """The value of input ``i`` when it is a constant (initializer or Constant node)."""
        if not self.has_input(i):
            return None
        src = self.inputs[i].node  # type: ignore[union-attr]
        return src.get_value() if isinstance(src, Constant) else None

    @property
    def num_outputs(self) -> int:
        return len(self.node.output)

    def output_used(self, i: int) -> bool:
        return i < len(self.node.output) and self.node.output[i] != ""

    # --- attributes --------------------------------------------------------------------
    def has_attr(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """The attribute's Python value (tensors as NumPy arrays, strings decoded)."""
        a = self._attrs.get(name)
        if a is None:
            if default is _MISSING:
                raise ValidationError(f"ONNX node '{self.name}' ({self.op_type}) needs attribute '{name}'")
            return default
        if a.ref_attr_name:
            raise UnsupportedOpError(f"ONNX node '{self.name}': attribute reference '{a.ref_attr_name}' unresolved")
        t = a.type
        A = onnx.AttributeProto
        if t == A.FLOAT:
            return float(a.f)
        if t == A.INT:
            return int(a.i)
        if t == A.STRING:
            return a.s.decode("utf-8")
        if t == A.TENSOR:
            return numpy_helper.to_array(a.t)
        if t == A.SPARSE_TENSOR:
            return _sparse_to_dense(a.sparse_tensor)
        if t == A.FLOATS:
            return [float(v) for v in a.floats]
        if t == A.INTS:
            return [int(v) for v in a.ints]
        if t == A.STRINGS:
            return [s.decode("utf-8") for s in a.strings]
        if t == A.TENSORS:
            return [numpy_helper.to_array(x) for x in a.tensors]
        if t == A.GRAPH:
            return a.g
        if t == A.GRAPHS:
            return list(a.graphs)
        if t == A.TYPE_PROTO:
            return a.tp
        raise UnsupportedOpError(f"ONNX node '{self.name}': attribute '{name}' has unsupported type {t}")

    def subgraph(self, attr_name: str, input_hints: list[Any] | None = None) -> Subgraph:
        """Convert the GRAPH attribute ``attr_name``; outer-scope names become extra inputs."""
        return self.converter.convert_subgraph(self.attr(attr_name), self.name, input_hints)

    # --- helpers for translators -------------------------------------------------------
    def constant(self, value: Any, dtype: Any = None) -> Output:
        return Constant(np.asarray(value, dtype=dtype)).output(0)

    def unsupported(self, why: str) -> UnsupportedOpError:
        return UnsupportedOpError(f"ONNX node '{self.name}' ({self.op_type}, opset {self.opset}): {why}")


def _sparse_to_dense(sp: onnx.SparseTensorProto) -> np.ndarray:
    values = numpy_helper.to_array(sp.values)
    idx = numpy_helper.to_array(sp.indices)
    dims = list(sp.dims)
    out = np.zeros(dims, dtype=values.dtype)
    if idx.ndim == 1:
        out.reshape(-1)[idx] = values
    else:
        out[tuple(idx.T)] = values
    return out
