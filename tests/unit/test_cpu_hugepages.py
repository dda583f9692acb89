"""Huge-page buffers of the CPU plugin: prepacked weights and segment arenas on 2 MB pages where the OS gives them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vinerun.plugins.cpu.kernels import _hugepages
from vinerun.plugins.cpu.kernels._hugepages import HUGE_PAGE, huge_page_buffer, weights_buffer

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def huge_kb() -> int:
    """This process's anonymous memory on huge pages (kB)."""
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0


def test_buffer_starts_at_a_huge_page_boundary_zero_filled_and_writable():
    a = huge_page_buffer(3 * HUGE_PAGE + 5)
    assert a.ctypes.data % HUGE_PAGE == 0 and a.size == 3 * HUGE_PAGE + 5 and a.dtype == np.uint8
    assert not a.any()
    a[:] = 7
    assert a[-1] == 7


def test_pool_packs_aligned_disjoint_buffers_and_starts_a_new_mapping_when_full(monkeypatch):
    monkeypatch.setattr(_hugepages, "_POOL", _hugepages._WeightsPool())
    monkeypatch.setattr(_hugepages, "_CHUNK", 1 << 20)
    views = [weights_buffer(n) for n in (1, 100, 4096, 300_000, 700_000, 3 << 20)]
    spans = sorted((v.ctypes.data, v.ctypes.data + v.size) for v in views)
    assert all(v.ctypes.data % 64 == 0 for v in views)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:], strict=False))  # no overlap
    for k, v in enumerate(views):
        v[:] = k
    assert [int(v[0]) for v in views] == list(range(len(views)))  # none overwrote another
    assert views[-1].size == 3 << 20  # larger than a chunk: a mapping of its own size


@pytest.mark.skipif(not THP.exists() or "[never]" in THP.read_text() or not Path("/proc/self/smaps_rollup").exists(),
                    reason="no transparent huge pages on this system")
def test_touched_buffer_is_on_huge_pages():
    before = huge_kb()
    a = huge_page_buffer(4 * HUGE_PAGE)
    a[:] = 1
    if huge_kb() - before < 2048:
        pytest.skip("the kernel gave no huge page (none free, or defragmentation off)")
    assert huge_kb() - before >= 2048


def test_weights_of_a_compiled_convolution_live_in_the_pool():
    from vinerun.plugins.cpu.kernels._dnnl import Conv2d, library

    lib = library()
    if lib is None:
        pytest.skip("needs the oneDNN binding (onednn-cpu-gomp)")
    w = np.random.default_rng(0).standard_normal((16, 8, 3, 3)).astype(np.float32)
    conv = Conv2d(lib, w, None, 1, (1, 8, 6, 6), (1, 16, 6, 6), [1, 1], [1, 1], [1, 1], [1, 1], [])
    x = np.random.default_rng(1).standard_normal((1, 6, 6, 8)).astype(np.float32)
    y = np.empty((1, 6, 6, 16), np.float32)
    conv((1, True), x.ctypes.data, y.ctypes.data)
    assert conv._buffers and all(b.ctypes.data % 64 == 0 for b in conv._buffers)
    import torch

    want = torch.nn.functional.conv2d(torch.from_numpy(x).permute(0, 3, 1, 2), torch.from_numpy(w), padding=1)
    np.testing.assert_allclose(y, want.permute(0, 2, 3, 1).numpy(), rtol=1e-4, atol=1e-4)
