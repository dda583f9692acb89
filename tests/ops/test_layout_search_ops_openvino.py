"""Roll, ShuffleChannels, GRN, Bucketize, SearchSorted, Inverse, SpaceToBatch, BatchToSpace and the adaptive
pools: built with the same opset call in vinerun and openvino, run, compared; vinerun's IR read by openvino."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import vinerun
from vinerun.ir.interpreter import run_reference

ov = pytest.importorskip("openvino")

RNG = np.random.default_rng(5)
I64, I32, F32 = np.int64, np.int32, np.float32


def _x(*shape):
    return RNG.standard_normal(shape).astype(F32)


CASES = {
    "roll": (7, lambda o, p: o.roll(p[0], np.array([2, -1], I64), np.array([0, -1], I64)), [_x(3, 4, 5)]),
    "shuffle_channels": (3, lambda o, p: o.shuffle_channels(p[0], 1, 3), [_x(2, 6, 3, 2)]),
    "shuffle_channels_last": (3, lambda o, p: o.shuffle_channels(p[0], -1, 2), [_x(2, 3, 4)]),
    "grn": (1, lambda o, p: o.grn(p[0], 0.5), [_x(2, 4, 3, 3)]),
    "bucketize_right": (3, lambda o, p: o.bucketize(p[0], np.array([-1, 0, 0.5, 1], F32), "i32", True),
                        [np.array([-2, -1, 0, 0.25, 0.5, 1, 2], F32)]),
    "bucketize_left": (3, lambda o, p: o.bucketize(p[0], np.array([-1, 0, 0.5, 1], F32), "i64", False),
                       [np.array([-2, -1, 0, 0.25, 0.5, 1, 2], F32)]),
    "search_sorted_rows": (15, lambda o, p: o.search_sorted(p[0], p[1], True),
                           [np.sort(RNG.integers(0, 10, (2, 3, 6)).astype(F32), -1),
                            RNG.integers(0, 10, (2, 3, 4)).astype(F32)]),
    "search_sorted_1d": (15, lambda o, p: o.search_sorted(p[0], p[1]),
                         [np.array([1, 3, 3, 5], F32), np.array([[3, 0], [6, 5]], F32)]),
    "inverse": (14, lambda o, p: o.inverse(p[0], False), [_x(2, 3, 3) + 3 * np.eye(3, dtype=F32)]),
    "inverse_adjoint": (14, lambda o, p: o.inverse(p[0], True), [_x(2, 3, 3) + 3 * np.eye(3, dtype=F32)]),
    "space_to_batch": (2, lambda o, p: o.space_to_batch(p[0], np.array([1, 1, 2, 3], I64), np.array([0, 0, 1, 0], I64),
                                                        np.array([0, 0, 1, 1], I64)), [_x(2, 3, 4, 5)]),
    "batch_to_space": (2, lambda o, p: o.batch_to_space(p[0], np.array([1, 1, 2, 3], I64), np.array([0, 0, 1, 0], I64),
                                                        np.array([0, 0, 1, 2], I64)), [_x(12, 3, 4, 5)]),
    "adaptive_avg_pool_2d": (8, lambda o, p: o.adaptive_avg_pool(p[0], np.array([3, 4], I32)), [_x(2, 3, 7, 10)]),
    "adaptive_avg_pool_1d": (8, lambda o, p: o.adaptive_avg_pool(p[0], np.array([4], I64)), [_x(2, 3, 9)]),
    "adaptive_max_pool_2d": (8, lambda o, p: o.adaptive_max_pool(p[0], np.array([3, 4], I32), "i32"),
                             [_x(2, 3, 7, 10)]),
}


def _build(lib, opset, build, arrays):
    o = importlib.import_module(f"{lib}.opset{opset}")
    params = [o.parameter(list(a.shape), a.dtype) for a in arrays]
    node = build(o, params)
    model = (ov if lib == "openvino" else vinerun).Model(node.outputs(), params)
    return node, model


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_openvino(name):
    opset, build, arrays = CASES[name]
    ov_node, ov_model = _build("openvino", opset, build, arrays)
    node, model = _build("vinerun", opset, build, arrays)
    for i in range(ov_node.get_output_size()):
        assert str(node.get_output_partial_shape(i)) == str(ov_node.get_output_partial_shape(i))
        assert node.get_output_element_type(i).get_type_name() == ov_node.get_output_element_type(i).get_type_name()
    want = ov.Core().compile_model(ov_model, "CPU").create_infer_request().infer(arrays)
    got = run_reference(model, arrays)
    for i, value in enumerate(got):
        np.testing.assert_allclose(value, want[i], rtol=1e-5, atol=1e-5)
        assert value.dtype == want[i].dtype


@pytest.mark.parametrize("name", ["roll", "shuffle_channels", "grn", "bucketize_left", "inverse_adjoint",
                                  "batch_to_space", "adaptive_max_pool_2d"])
def test_openvino_reads_the_ir_vinerun_writes(name, tmp_path):
    opset, build, arrays = CASES[name]
    _, model = _build("vinerun", opset, build, arrays)
    vinerun.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    back = ov.Core().read_model(tmp_path / "m.xml")
    want = ov.Core().compile_model(back, "CPU").create_infer_request().infer(arrays)
    for i, value in enumerate(run_reference(model, arrays)):
        np.testing.assert_allclose(value, want[i], rtol=1e-5, atol=1e-5)


def test_scalar_shift_rolls_every_axis():
    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    node = vinerun.opset7.roll(x, np.int64(1), np.array([1, 2], I64))
    np.testing.assert_array_equal(node.evaluate([x, np.int64(1), np.array([1, 2])])[0], np.roll(x, (1, 1), (1, 2)))


def test_invalid_inputs_are_named():
    with pytest.raises(vinerun.errors.ValidationError, match="divisible by group"):
        vinerun.opset3.shuffle_channels(_x(2, 5, 3), 1, 2)
    with pytest.raises(vinerun.errors.ValidationError, match="block_shape"):
        vinerun.opset2.space_to_batch(_x(2, 3, 4), np.array([1, 2], I64), np.array([0, 0], I64),
                                      np.array([0, 0], I64))
    with pytest.raises(vinerun.errors.ValidationError, match="square"):
        vinerun.opset14.inverse(_x(2, 3, 4))
