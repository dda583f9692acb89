"""ONNX backend node tests (onnx.backend.test, CPU cases) through vinerun's public API."""

from __future__ import annotations

import os
import warnings

import onnx.backend.test

from tests.conformance.onnx_backend import VinerunBackend
from tests.conformance.onnx_expected_failures import EXPECTED_FAILURES, UNCOMPARABLE

warnings.filterwarnings("ignore", category=RuntimeWarning)

_backend_test = onnx.backend.test.BackendTest(VinerunBackend, __name__)
for _pattern, _reason in EXPECTED_FAILURES:
    _backend_test.xfail(_pattern)
for _pattern, _reason in UNCOMPARABLE:
    _backend_test.exclude(_pattern)
if os.environ.get("VINERUN_ONNX_ONLY"):
    _backend_test.include(os.environ["VINERUN_ONNX_ONLY"])

# Node tests only: the model zoo tests download weights, which code here must never do.
globals().update({k: v for k, v in _backend_test.test_cases.items() if k == "OnnxBackendNodeModelTest"})
