"""oneDNN's MatMul with constant weights given in any strides: a transposed constant (``transpose_b``) is reordered
into the primitive's layout as it is, without a transposing copy first, and gives the same product."""

from __future__ import annotations

import numpy as np
import pytest

from vinerun.plugins.cpu.kernels._dnnl import F32, data_address, library
from vinerun.plugins.cpu.kernels._dnnl_ops import MatMul, dense

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(5)


@pytest.mark.parametrize("view", ["contiguous", "transposed", "reversed rows", "every other column"])
def test_constant_weights_in_any_strides(view):
    rows, k, n = 3, 40, 24
    nk = RNG.standard_normal((n, 2 * k)).astype(np.float32)
    w = {"contiguous": np.ascontiguousarray(nk[:, :k].T), "transposed": nk[:, :k].T,
         "reversed rows": np.ascontiguousarray(nk[:, :k].T)[::-1],  # negative strides: copied first
         "every other column": nk[:, ::2].T}[view]
    x = RNG.standard_normal((rows, k)).astype(np.float32)
    mm = MatMul(library(), dense((rows, k), F32), w, dense((rows, n), F32))
    if view == "transposed":
        assert not mm.w_plain.flags.c_contiguous and np.shares_memory(mm.w_plain, nk)
    y = np.empty((rows, n), np.float32)
    mm(1, data_address(x), data_address(y))
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)
