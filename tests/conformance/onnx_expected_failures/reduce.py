"""Known failures of the reductions / softmax / Gemm / Einsum / losses area."""

EXPECTED_FAILURES: list[tuple[str, str]] = []
