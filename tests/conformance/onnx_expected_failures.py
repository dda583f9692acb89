"""ONNX backend node tests that vinerun is known to fail, one reason per pattern.

Each entry is ``(regex matched against the test name, reason)``. They run as xfail: a test
that starts passing fails the suite ("unexpected success") until its entry is removed here.
"""

EXPECTED_FAILURES: list[tuple[str, str]] = [
]
