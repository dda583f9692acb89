"""``op.util``: ``Variable`` and ``VariableInfo`` (how ReadValue / Assign share a state), and the port
descriptions of TensorIterator / Loop bodies (``InvariantInputDescription`` ... ``ConcatOutputDescription``)."""

from vinerun.ops.control_flow import (
    BodyOutputDescription,
    ConcatOutputDescription,
    InvariantInputDescription,
    MergedInputDescription,
    SliceInputDescription,
)
from vinerun.ops.state import Variable, VariableInfo

__all__ = ["BodyOutputDescription", "ConcatOutputDescription", "InvariantInputDescription",
           "MergedInputDescription", "SliceInputDescription", "Variable", "VariableInfo"]
