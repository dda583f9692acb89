"""DEVICE_PROPERTIES under AUTO, MULTI, HETERO and BATCH: each device gets its own entry, and only it."""

from __future__ import annotations

import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import VinerunError


def _model() -> ov.Model:
    x = ops.parameter([2, 2], ov.Type.f32, name="x")
    return ov.Model([ops.sigmoid(x)], [x], "sig")


@pytest.mark.parametrize("device", ["AUTO:A,B", "MULTI:A,B", "HETERO:A,B", "BATCH:A(2)"])
def test_each_device_gets_its_own_entry(core, fake_device, device):
    a, b = fake_device("A"), fake_device("B")
    config = {"DEVICE_PROPERTIES": {"A": {"NUM_STREAMS": 3}, "B": {"NUM_STREAMS": 2}}}
    core.compile_model(_model(), device, config)
    assert a.last_config.get("NUM_STREAMS") == 3
    assert "DEVICE_PROPERTIES" not in a.last_config
    if b.compile_count:
        assert b.last_config.get("NUM_STREAMS") == 2


def test_the_properties_helper_form(core, fake_device):
    a = fake_device("A")
    core.compile_model(_model(), "AUTO:A", dict([ov.properties.device.properties({"A": {"PERF_COUNT": True}})]))
    assert a.last_config.get("PERF_COUNT") is True


def test_a_key_the_named_device_does_not_know_is_its_error(core, fake_device):
    fake_device("A")
    with pytest.raises(VinerunError, match="Unsupported property NO_SUCH_KEY by A"):
        core.compile_model(_model(), "AUTO:A", {"DEVICE_PROPERTIES": {"A": {"NO_SUCH_KEY": 1}}})


def test_real_cpu_under_auto_takes_its_streams():
    core, tput = ov.Core(), {"PERFORMANCE_HINT": "THROUGHPUT"}
    direct = core.compile_model(_model(), "CPU", {**tput, "NUM_STREAMS": 1})
    auto = core.compile_model(_model(), "AUTO:CPU", {**tput, "DEVICE_PROPERTIES": {"CPU": {"NUM_STREAMS": 1}}})
    key = "OPTIMAL_NUMBER_OF_INFER_REQUESTS"
    assert auto.get_property(key) == direct.get_property(key) == 2  # one stream, a job queued behind the running one
