"""OpenVINO's ``op`` namespace: node classes built directly (``op.Parameter(Type.f32, PartialShape([1, 3]))``,
``op.Constant(array)``) and ``op.util.Variable`` / ``VariableInfo`` for stateful models."""

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.op import util
from vinerun.ops.state import Assign, ReadValue

__all__ = ["Assign", "Constant", "Parameter", "ReadValue", "Result", "util"]
