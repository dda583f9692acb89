"""The garbage collector is paused during read/compile and restored after, also when nested or failing."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.runtime.gc_pause import gc_paused


def test_pause_nests_and_restores() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_pause_keeps_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_across_threads() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's pause is still open
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_compile_and_read_leave_the_collector_on(tmp_path) -> None:
    x = ops.parameter([1, 4], name="x")
    model = ov.Model([ops.relu(x)], [x], "m")
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path))
    core = ov.Core()
    core.compile_model(core.read_model(str(path)), "CPU")
    assert gc.isenabled()
    with pytest.raises(Exception, match="missing.xml"):
        core.read_model(str(tmp_path / "missing.xml"))
    assert gc.isenabled()
    compiled = core.compile_model(model, "CPU")
    assert np.array_equal(compiled({"x": np.array([[-1, 2, -3, 4]], np.float32)})[0], [[0, 2, 0, 4]])
