"""Tests that need a real GPU (CUDA or XPU): skipped where PyTorch sees none (CI, the 2-core machines).
``benchmarks/gpu/device_check.sh`` runs them on the GPU machine."""

from __future__ import annotations

import pytest

from vinerun.plugins.gpu import backend


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if backend.has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (PyTorch reports no CUDA / XPU device)")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
