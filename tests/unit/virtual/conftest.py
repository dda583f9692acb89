"""Fixtures of the virtual-device tests: a fresh Core and test-only devices (see ``fake_devices``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import vinerun as ov
from tests.unit.virtual.fake_devices import FakeDevice, register


@pytest.fixture
def core() -> ov.Core:
    """A new Core (test devices registered on it stay on it)."""
    return ov.Core()


@pytest.fixture
def fake_device(core: ov.Core) -> Callable[..., FakeDevice]:
    """``fake_device(name, **kwargs)`` registers a :class:`FakeDevice` on the ``core`` fixture.

    Compile and infer gates it was given are opened at teardown, so no background compile outlives the test.
    """
    made: list[FakeDevice] = []

    def make(name: str = "FAKE", **kwargs: Any) -> FakeDevice:
        device = register(core, name, **kwargs)
        made.append(device)
        return device

    yield make
    for device in made:
        for gate in (device.compile_gate, device.infer_gate):
            if gate is not None:
                gate.set()
