"""The CPU stream's intra-op thread count: set on whichever thread runs the request (a sync ``infer`` runs on
the caller's), and :class:`ThreadGovernor`'s switch between all threads and one (fed made-up times: no timing)."""

from __future__ import annotations

import threading

import numpy as np
import torch

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.model import Model
from vinerun.plugins.cpu.thread_governor import ThreadGovernor, omp_threads


def feed(g: ThreadGovernor, times: dict[int, float], calls: int) -> list[int]:
    """Run ``calls`` calls, each taking ``times[threads]``; the thread counts chosen."""
    chosen = []
    for _ in range(calls):
        n = g.choose()
        chosen.append(n)
        g.record(n, times[n])
    return chosen


def test_single_thread_streams_never_switch():
    g = ThreadGovernor(1)
    assert set(feed(g, {1: 0.05}, 50)) == {1}


def test_no_probe_in_the_first_calls_of_an_idle_machine():
    """Each thread count packs its own oneDNN weights: a few calls must not pay for (and hold) a second copy."""
    assert feed(ThreadGovernor(2, budget=8.0), {2: 0.030, 1: 0.050}, 7) == [2] * 7


def test_idle_machine_keeps_all_threads_and_probes_ever_less():
    g = ThreadGovernor(2, budget=8.0, max_budget=32.0)
    chosen = feed(g, {2: 0.030, 1: 0.050}, 400)
    assert g.current == 2 and g.budget == 32.0
    assert 3 <= chosen.count(1) <= 12  # probes cost at most ~1/8 of the time, then ~1/32
    assert chosen.count(1) * 0.050 < 0.1 * sum(0.030 for n in chosen if n == 2)


def test_a_taken_core_moves_to_one_thread_at_once_and_back_when_freed():
    g = ThreadGovernor(2)
    feed(g, {2: 0.030, 1: 0.050}, 20)
    chosen = feed(g, {2: 0.700, 1: 0.090}, 200)  # another process takes a core
    assert chosen[:2] == [2, 1] and g.current == 1
    slow = chosen[2:].count(2) * 0.700
    assert slow < 0.2 * chosen[2:].count(1) * 0.090  # the slow probes of 2 threads stay a small share
    chosen = feed(g, {2: 0.030, 1: 0.050}, 10)  # the core is back: 1 thread speeds up, 2 threads is tried
    assert g.current == 2 and chosen.index(2) <= 4


def test_first_slowdown_without_a_one_thread_time_probes_it():
    g = ThreadGovernor(2)
    for _ in range(3):
        g.record(2, 0.03)
    g.record(2, 0.5)
    assert g.choose() == 1
    g.record(1, 0.06)
    assert g.current == 1


def test_a_starved_multi_thread_call_probes_one_thread_even_when_slow_from_the_start():
    """Loaded from the first call: no fast time to compare with, but the caller got the CPU for 30% of it."""
    g = ThreadGovernor(2)
    g.record(2, 0.400, 0.380)
    assert g.choose() == 2
    g.record(2, 0.400, 0.120)
    assert g.choose() == 1
    g.record(1, 0.100, 0.095)
    assert g.current == 1


def test_omp_threads_sets_only_the_calling_thread_and_restores():
    seen = {}

    def worker():
        before = torch.get_num_threads()
        with omp_threads(1):
            seen["inside"] = torch.get_num_threads()
        seen["after"] = torch.get_num_threads() == before

    main_before = torch.get_num_threads()
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"inside": 1, "after": True}
    assert torch.get_num_threads() == main_before


def test_sync_infer_runs_with_the_streams_thread_count():
    x = Parameter(np.float32, [4, 8], name="x")
    model = Model([Result(ops.relu(x).output(0))], [x], "relu")
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 1})
    req = compiled.create_infer_request()
    plan = compiled._impl.plan
    original, seen = plan.run, []

    def spy(inputs, profile=None):
        seen.append(torch.get_num_threads())
        return original(inputs, profile)

    plan.run = spy
    before = torch.get_num_threads()
    req.infer([np.ones((4, 8), np.float32)])
    assert seen == [1] and torch.get_num_threads() == before
