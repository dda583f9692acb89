"""Compiling gives the compiling thread no OpenMP team: only the thread that runs inference gets one.

GNU OpenMP keeps a team of threads per thread that starts parallel regions; once the process has more team
threads than cores, teams stop spinning between regions and every region waits for a wake-up (a stream thread
ran MobileNetV2 at 8 ms instead of 4.7 after a compile-time weight reorder had given the main thread a team).
Run in a fresh process: threads of earlier tests would hide a new one.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from vinerun.plugins.cpu.kernels._dnnl import library

SCRIPT = r"""
import os, numpy as np, vinerun as ov
from vinerun.models.cnn import cnn_model, cnn_inputs

def threads():
    return len(os.listdir("/proc/self/task"))

before = threads()
compiled = ov.Core().compile_model(cnn_model(image=32, width=16), "CPU",
                                   {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": 2})
after_compile = threads()
queue = ov.AsyncInferQueue(compiled, 2)
for _ in range(4):
    queue.start_async(cnn_inputs(image=32))
queue.wait_all()
print(before, after_compile, threads())
"""


@pytest.mark.skipif(library() is None, reason="onednn-cpu-gomp is not installed")
@pytest.mark.skipif(not os.path.exists("/proc/self/task") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two cores")
def test_compile_leaves_the_compiling_thread_without_a_team():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    before, after_compile, after_async = (int(v) for v in out.stdout.split()[-3:])
    assert after_compile == before  # no OpenMP helper thread for the compiling thread
    assert after_async == before + 2  # the stream's thread and its one helper
