"""ONNX backend node tests vinerun is known to fail, one reason per pattern.

Each module in this package (one per op area) defines ``EXPECTED_FAILURES``: a list of
``(regex matched against the test name, reason)``. They run as xfail: a test that starts
passing fails the suite ("unexpected success") until its entry is removed. ``UNCOMPARABLE`` (optional,
same form) lists tests whose expected outputs cannot be compared at all (random draws, which may match by
chance): they are excluded.
"""

import importlib
import pkgutil

EXPECTED_FAILURES: list[tuple[str, str]] = []
UNCOMPARABLE: list[tuple[str, str]] = []
for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _module = importlib.import_module(f"{__name__}.{_m.name}")
    EXPECTED_FAILURES += _module.EXPECTED_FAILURES
    UNCOMPARABLE += getattr(_module, "UNCOMPARABLE", [])
