"""The GPU's OPTIMAL_BATCH_SIZE scales with the device's multiprocessors; CUDA graph captures are serialized and
thread-local (no GPU needed: fake devices and a fake capture)."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

from vinerun import opset13 as ops
from vinerun.ir.model import Model
from vinerun.plugins.gpu import backend, batch_size, plan
from vinerun.plugins.gpu.backend import GpuDevice


def conv_net(channels: int, blocks: int) -> Model:
    """1x{channels}x56x56 through ``blocks`` 3x3 convolutions: 2 x 56^2 x 9 x channels^2 flops each."""
    x = ops.parameter([1, channels, 56, 56], np.float32, name="x")
    w = ops.constant(np.zeros((channels, channels, 3, 3), np.float32))
    y = x
    for _ in range(blocks):
        y = ops.relu(ops.convolution(y, w, [1, 1], [1, 1], [1, 1], [1, 1]))
    return Model([y], [x], "convs")


@pytest.fixture
def gpu_with(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``gpu_with(sms, memory_gb)``: a CUDA device whose properties say so (nothing runs on it)."""
    def make(sms: int, memory_gb: float = 80.0) -> GpuDevice:
        props = types.SimpleNamespace(multi_processor_count=sms, total_memory=int(memory_gb * 2**30), name="fake",
                                      major=9, minor=0)
        monkeypatch.setattr(GpuDevice, "properties", lambda self: props)
        return GpuDevice("cuda", 0)
    return make


def test_optimal_batch_grows_with_the_multiprocessors(gpu_with: Any) -> None:
    model = conv_net(64, 4)  # ~0.46 GFLOP per image
    flops = batch_size.model_need(model)[2]
    sizes = [batch_size.optimal_batch_size(model, gpu_with(sms)) for sms in (4, 16, 132)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    for sms, size in zip((4, 16, 132), sizes, strict=True):
        target = batch_size.FLOPS_PER_UNIT * sms
        assert size == batch_size.OPTIMAL_LIMIT or flops * size >= target  # enough work...
        assert size == 1 or flops * size / 2 < target  # ...and the smallest power of two that is


def test_resnet50_sized_model_gets_32_on_an_h100(gpu_with: Any) -> None:
    model = conv_net(256, 2)  # ~8.5 GFLOP per image, about ResNet-50's 8.2
    assert batch_size.optimal_batch_size(model, gpu_with(132)) == 32
    assert batch_size.saturating_flops(gpu_with(132)) == pytest.approx(132 * batch_size.FLOPS_PER_UNIT)


def test_small_model_is_capped_and_max_stays_memory_based(gpu_with: Any) -> None:
    model = conv_net(8, 1)  # a few MFLOP: would want thousands
    assert batch_size.optimal_batch_size(model, gpu_with(132)) == batch_size.OPTIMAL_LIMIT
    assert batch_size.max_batch_size(model, gpu_with(132)) == batch_size.LIMIT
    assert batch_size.max_batch_size(conv_net(256, 2), gpu_with(132, memory_gb=1.0)) < batch_size.LIMIT


def test_optimal_never_exceeds_max(gpu_with: Any) -> None:
    model = conv_net(256, 2)
    device = gpu_with(132, memory_gb=0.5)
    assert batch_size.optimal_batch_size(model, device) <= batch_size.max_batch_size(model, device)


def test_stand_in_does_not_batch() -> None:
    with backend.stand_in() as device:
        assert batch_size.optimal_batch_size(conv_net(256, 2), device) == 1


class _Capture:
    """Stands for ``torch.cuda.graph``: records its mode and that no two captures overlap."""

    active = 0
    overlaps = 0
    modes: list[str] = []
    streams: list[Any] = []
    staged_during_capture = 0

    def __init__(self, graph: Any, stream: Any = None, capture_error_mode: str = "global") -> None:
        _Capture.modes.append(capture_error_mode)
        _Capture.streams.append(stream)

    def __enter__(self) -> None:
        _Capture.active += 1
        _Capture.overlaps += _Capture.active > 1
        time.sleep(0.01)  # a capture takes a while: a second thread would come in now

    def __exit__(self, *exc: object) -> None:
        _Capture.active -= 1


@pytest.fixture
def fake_capture(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Capture]]:
    _Capture.active = _Capture.overlaps = _Capture.staged_during_capture = 0
    _Capture.modes, _Capture.streams = [], []

    def pinned(x: torch.Tensor) -> torch.Tensor:
        _Capture.staged_during_capture += _Capture.active > 0
        return torch.empty(x.shape, dtype=x.dtype)

    monkeypatch.setattr(torch.cuda, "graph", _Capture)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: object())
    monkeypatch.setattr(plan, "_pinned_like", pinned)
    yield _Capture


def test_captures_serialized_thread_local_off_request_streams(fake_capture: type[_Capture]) -> None:
    class FakePlan:
        def run(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
            return [x + 1 for x in xs]

    stream = types.SimpleNamespace(synchronize=lambda: None)
    runners = [plan.GraphRunner(FakePlan(), stream) for _ in range(4)]  # type: ignore[arg-type]
    threads = [threading.Thread(target=r._capture, args=([torch.zeros(2, 3)],)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake_capture.modes == ["thread_local"] * 4
    assert fake_capture.streams == [None] * 4  # PyTorch's capture stream: requests share theirs
    assert fake_capture.overlaps == 0
    assert fake_capture.staged_during_capture == 0
    assert not any(r.failed for r in runners)
