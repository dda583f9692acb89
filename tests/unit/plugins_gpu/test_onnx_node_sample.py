"""A sample of the ONNX backend node tests through ``GPU`` on the stand-in (f32 hint, as the CPU suite).

Every 4th case by name (about 470 of 1,878, a few seconds); the whole suite, with failures grouped by reason
and blamed on a kernel or the plugin, is ``benchmarks/gpu/onnx_node_tests.py``. A case may fail only when the
CPU suite expects it to fail too, or when it is in ``GPU_EXPECTED_FAILURES``; a listed case that passes fails
the test until its entry is removed (as the CPU suite's xfails are strict).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import onnx.backend.test.loader
import pytest
from onnx.backend.test.runner import Runner, _normalize_tensor

from tests.conformance.onnx_backend import VinerunBackend
from tests.conformance.onnx_expected_failures import EXPECTED_FAILURES, UNCOMPARABLE

SAMPLE = 4

#: (regex on the test name, reason): cases the GPU fails and the CPU passes
GPU_EXPECTED_FAILURES: list[tuple[str, str]] = []


class GpuBackend(VinerunBackend):
    device = "GPU"


def _expected(name: str, table: list[tuple[str, str]], suffix: str = "") -> bool:
    return any(re.search(p, name + suffix) for p, _ in table)


def _cases() -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = sorted(onnx.backend.test.loader.load_model_tests(kind="node"), key=lambda c: c.name)
    return [c for c in cases if not _expected(c.name, UNCOMPARABLE, "_cpu")][::SAMPLE]


def _passes(case: Any) -> bool:
    try:
        rep = GpuBackend.prepare(case.model)
        for inputs, expected in case.data_sets:
            outputs = list(rep.run([_normalize_tensor(x) for x in inputs]))
            Runner.assert_similar_outputs([_normalize_tensor(y) for y in expected], outputs,
                                          rtol=case.rtol, atol=case.atol)
    except Exception:  # noqa: BLE001 - a failure of any kind is compared with the lists below
        return False
    return True


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_sampled_node_tests_pass_on_gpu_stand_in(stand_in: Any) -> None:
    cases = _cases()
    assert len(cases) > 400
    new_failures, now_passing = [], []
    for case in cases:
        passed = _passes(case)
        gpu_listed = _expected(case.name, GPU_EXPECTED_FAILURES)
        if not passed and not gpu_listed and not _expected(case.name, EXPECTED_FAILURES, "_cpu"):
            new_failures.append(case.name)
        if passed and gpu_listed:
            now_passing.append(case.name)
    assert not new_failures, f"fail on GPU (python benchmarks/gpu/onnx_node_tests.py --only NAME): {new_failures}"
    assert not now_passing, f"pass now: narrow GPU_EXPECTED_FAILURES: {now_passing}"
