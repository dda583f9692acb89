"""GPU indexing kernels (Gather*, OneHot, Scatter*) against the NumPy references (exact)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU, check, const, param, rand
from vinerun.errors import ValidationError
from vinerun.ops import gather, scatter, sequence_gen
from vinerun.plugins.gpu.kernels import select_kernel, to_device


@pytest.mark.parametrize("et", ["f32", "f16", "i64", "boolean"])
@pytest.mark.parametrize("axis,batch_dims", [(0, 0), (2, 0), (-1, 1), (1, 1)])
def test_gather_out_of_range_gives_zeros(et, axis, batch_dims):
    x = rand(et, [2, 3, 4])
    idx = np.array([[0, -1, 3, 9], [-5, 2, 1, 0]], np.int32)
    node = gather.Gather(param(et, [2, 3, 4]), param("i32", [2, 4]), const(axis), batch_dims=batch_dims)
    check(node, [x, idx, np.array(axis)])


@pytest.mark.parametrize("constant", [True, False])
def test_gather_elements(constant):
    x = rand("f32", [3, 4])
    idx = np.array([[0, -1, 2, 1], [2, 2, 0, -3]], np.int64)
    node = gather.GatherElements(param("f32", [3, 4]), const(idx) if constant else param("i64", [2, 4]), axis=0)
    assert select_kernel(node, CPU).host is not constant
    check(node, [x, idx])
    if not constant:
        with pytest.raises(ValidationError):
            select_kernel(node, CPU).fn([to_device(x, CPU), to_device(idx + 5, CPU)])


def test_gather_elements_constant_out_of_range_runs_on_host():
    node = gather.GatherElements(param("f32", [3, 4]), const([[3, 0, 0, 0]]), axis=0)
    assert select_kernel(node, CPU).exec_type == "host_ref"


@pytest.mark.parametrize("cls", [gather.GatherND, gather.GatherNDV5])
@pytest.mark.parametrize("batch_dims,ishape", [(0, [3, 2]), (1, [2, 3, 1]), (2, [2, 3, 1]), (0, [2, 2, 3])])
def test_gather_nd(cls, batch_dims, ishape):
    x = rand("i32", [2, 3, 4])
    sizes = np.array([2, 3, 4])[batch_dims:batch_dims + ishape[-1]]
    idx = (np.random.default_rng(1).integers(0, 100, ishape) % sizes) - sizes * (np.arange(ishape[-1]) % 2)
    check(cls(param("i32", [2, 3, 4]), param("i64", ishape), batch_dims=batch_dims), [x, idx])


@pytest.mark.parametrize("mode", ["ignore_negative", "normalize"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(mode, axis):
    idx = np.array([[0, 3, -1], [5, -4, 2]], np.int64)
    node = sequence_gen.OneHot(param("i64", [2, 3]), const(4), param("f32", []), param("f32", []), axis=axis,
                               negative_indices_mode=mode)
    check(node, [idx, np.array(4), np.array(2.5, np.float32), np.array(-1, np.float32)])


@pytest.mark.parametrize("et", ["f32", "i32"])
def test_scatter_update(et):
    x, upd = rand(et, [4, 3]), rand(et, [2, 3], 1)
    node = scatter.ScatterUpdate(param(et, [4, 3]), const([3, -4]), param(et, [2, 3]), const(0))
    check(node, [x, np.array([3, -4]), upd, np.array(0)])


@pytest.mark.parametrize("reduction", ["none", "sum", "prod", "min", "max"])
@pytest.mark.parametrize("use_init_val", [True, False])
def test_scatter_elements_reductions(reduction, use_init_val):
    x, upd = rand("i32", [3, 4]), rand("i32", [2, 4], 1)
    idx = np.array([[0, 2, 1, -1], [1, 0, 2, 0]])
    node = scatter.ScatterElementsUpdate(param("i32", [3, 4]), const(idx), param("i32", [2, 4]), const(0),
                                         reduction=reduction, use_init_val=use_init_val)
    check(node, [x, idx, upd, np.array(0)])


def test_scatter_nd_and_repeated_targets_on_host():
    x, upd = rand("f32", [4, 3]), rand("f32", [2, 3], 1)
    node = scatter.ScatterNDUpdate(param("f32", [4, 3]), const([[1], [-1]]), param("f32", [2, 3]))
    check(node, [x, np.array([[1], [-1]]), upd])
    again = scatter.ScatterNDUpdate(param("f32", [4, 3]), const([[1], [1]]), param("f32", [2, 3]))
    assert select_kernel(again, CPU).exec_type == "host_ref"
    dynamic = scatter.ScatterNDUpdate(param("f32", [4, 3]), param("i64", [2, 1]), param("f32", [2, 3]))
    assert select_kernel(dynamic, CPU).exec_type == "host_ref"
