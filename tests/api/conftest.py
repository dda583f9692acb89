"""Fixtures of the API tests: ``ov`` runs a test once with vinerun and once with openvino (the oracle,
skipped where it is not installed)."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest


@pytest.fixture(params=["vinerun", "openvino"])
def ov(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "openvino":
        pytest.importorskip("openvino")
    return importlib.import_module(request.param)
