"""The GPU plugin's machine-independent tests: plans run on the test-only stand-in (PyTorch's CPU device)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vinerun.plugins.gpu import backend


@pytest.fixture
def stand_in() -> Iterator[backend.GpuDevice]:
    """Inside the test, ``GPU`` is listed and runs its plans on PyTorch's CPU device."""
    with backend.stand_in() as device:
        yield device
