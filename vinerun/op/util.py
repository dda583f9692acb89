"""``op.util``: ``Variable`` and ``VariableInfo`` (how ReadValue / Assign share a state)."""

from vinerun.ops.state import Variable, VariableInfo

__all__ = ["Variable", "VariableInfo"]
