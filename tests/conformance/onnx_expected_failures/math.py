"""Element-wise math, activations, comparisons, logic, bitwise ops and casts: known failures.

Every ONNX node test of this area passes (onnx 1.23.2): the list is empty.
"""

EXPECTED_FAILURES: list[tuple[str, str]] = []
