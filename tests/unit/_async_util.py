"""Helpers for the async and streams tests: a tiny model and a plan whose 'kernel' blocks or sleeps."""

from __future__ import annotations

import threading
import time

import numpy as np
import torch

import vinerun as ov


def tiny_model() -> ov.Model:
    from vinerun import opset13 as ops

    x = ops.parameter([1, 4], ov.Type.f32, name="x")
    return ov.Model([ops.relu(x)], [x], "tiny")


def x(value: float = 1.0) -> np.ndarray:
    return np.full((1, 4), value, np.float32)


class RecordingPlan:
    """Stands in for a compiled model's plan: records (start, end, thread, torch threads) per run;
    sleeps ``seconds`` (releasing the GIL, as kernels do) or blocks until ``release`` is set."""

    def __init__(self, real_run, seconds: float = 0.0, block: bool = False):
        self.real_run = real_run
        self.seconds = seconds
        self.release = threading.Event()
        if not block:
            self.release.set()
        self.started = threading.Event()
        self.log: list[tuple[float, float, str, int]] = []
        self.lock = threading.Lock()

    def run(self, inputs, profile=None):
        t0 = time.perf_counter()
        self.started.set()
        self.release.wait(60)
        time.sleep(self.seconds)
        out = self.real_run(inputs, profile)
        with self.lock:
            self.log.append((t0, time.perf_counter(), threading.current_thread().name, torch.get_num_threads()))
        return out


def patch_plan(compiled: ov.CompiledModel, seconds: float = 0.0, block: bool = False) -> RecordingPlan:
    impl = compiled._impl
    recorder = RecordingPlan(impl.plan.run, seconds, block)
    impl.plan.run = recorder.run
    return recorder
