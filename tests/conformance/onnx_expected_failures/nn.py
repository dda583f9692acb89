"""Known failures in convolution, pooling and normalization (none at the moment)."""

EXPECTED_FAILURES: list[tuple[str, str]] = []
