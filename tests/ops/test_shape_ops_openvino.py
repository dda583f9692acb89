"""Shape and data-movement ops in OpenVINO IR files written by openvino: read, run, and compare with openvino."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset15")
for _old in ("opset1", "opset3", "opset5", "opset7"):
    pytest.importorskip(f"openvino.{_old}")

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3, 4, 6)).astype(np.float32)
I64 = np.int64


def _cases():
    """(name, builder from the Parameter of X to an openvino node)."""
    return [
        ("strided_slice_masks", lambda p: ops.strided_slice(p, np.array([0, 1, -1], I64), np.array([0, 3, 0], I64),
                                                            np.array([1, 1, -2], I64), begin_mask=[1, 0, 0],
                                                            end_mask=[1, 0, 1], new_axis_mask=[0, 0, 0],
                                                            shrink_axis_mask=[0, 0, 0], ellipsis_mask=[0, 0, 0])),
        ("strided_slice_ellipsis", lambda p: ops.strided_slice(p, np.array([0, 0, 2], I64), np.array([0, 0, 3], I64),
                                                               np.array([1, 1, 1], I64), begin_mask=[0, 0, 0],
                                                               end_mask=[0, 0, 0], new_axis_mask=[1, 0, 0],
                                                               shrink_axis_mask=[0, 0, 1], ellipsis_mask=[0, 1, 0])),
        ("shapeof_reshape", lambda p: ops.reshape(p, ops.concat([ops.gather(ops.shape_of(p), np.array([0], I64),
                                                                            np.int64(0)),
                                                                 np.array([0, -1], I64)], 0), special_zero=True)),
        ("squeeze_unsqueeze", lambda p: ops.squeeze(ops.unsqueeze(p, np.array([0, 3], I64)), np.array([0], I64))),
        ("transpose", lambda p: ops.transpose(p, np.array([3, 1, 0, 2], I64))),
        ("split", lambda p: ops.split(p, np.int64(3), 2).output(1)),
        ("variadic_split", lambda p: ops.variadic_split(p, np.int64(-1), np.array([1, -1, 2], I64)).output(1)),
        ("slice_negative_step", lambda p: ops.slice(p, np.array([-1, 5], I64), np.array([-10, 0], I64),
                                                    np.array([-1, -2], I64), np.array([1, 3], I64))),
        ("gather_batch", lambda p: ops.gather(p, np.array([[2, 0], [1, -1]], I64), np.int64(2), 1)),
        ("gather_elements", lambda p: ops.gather_elements(p, RNG.integers(0, 3, (2, 3, 4, 6)), 1)),
        ("gather_nd", lambda p: ops.gather_nd(p, np.array([[[1], [0]], [[2], [2]]], I64), 1)),
        ("scatter_elements", lambda p: ops.scatter_elements_update(p, RNG.integers(0, 4, (2, 3, 2, 6)),
                                                                   np.ones((2, 3, 2, 6), np.float32), np.int64(2),
                                                                   "sum", True)),
        ("scatter_nd", lambda p: ops.scatter_nd_update(p, np.array([[1, 2], [0, 0]], I64),
                                                       np.ones((2, 4, 6), np.float32), "max")),
        ("scatter_update", lambda p: ops.scatter_update(p, np.array([3, 0], I64), np.zeros((2, 3, 2, 6), np.float32),
                                                        np.int64(2))),
        ("broadcast", lambda p: ops.broadcast(p, np.array([2, 2, 3, 4, 6], I64))),
        ("broadcast_bidirectional", lambda p: ops.broadcast(p, np.array([3, 1, 1], I64),
                                                            broadcast_spec="BIDIRECTIONAL")),
        ("tile", lambda p: ops.tile(p, np.array([1, 2, 1, 3], I64))),
        ("pad_reflect", lambda p: ops.pad(p, np.array([0, 1, 2, -1], I64), np.array([1, 0, -1, 2], I64), "reflect")),
        ("pad_constant", lambda p: ops.pad(p, np.array([0, 1, 2, -1], I64), np.array([1, 0, -1, 2], I64), "constant",
                                           np.float32(2.5))),
        ("topk", lambda p: ops.topk(p, np.int64(3), -1, "min", "value", "i32").output(1)),
        ("reverse_sequence", lambda p: ops.reverse_sequence(p, np.array([2, 4], I64), 0, 2)),
        ("depth_to_space", lambda p: ops.depth_to_space(ops.reshape(p, np.array([2, 12, 2, 3], I64), False),
                                                        "depth_first", 2)),
        ("space_to_depth", lambda p: ops.space_to_depth(p, "blocks_first", 2)),
        ("cumsum", lambda p: ops.cum_sum(p, np.int64(3), exclusive=True, reverse=True)),
        ("nonzero", lambda p: ops.non_zero(ops.greater(p, np.float32(0.5)), "i64")),
        ("unique", lambda p: ops.unique(ops.floor(p), sorted=False).output(2)),
        ("range", lambda p: ops.add(p, ops.range(np.float32(0), np.float32(3), np.float32(0.5), "f32"))),
        ("one_hot", lambda p: ops.one_hot(np.array([[0, 2], [1, -1]], I64), np.int64(3), np.float32(5),
                                          np.float32(-1), 1)),
        ("eye", lambda p: ops.add(p, ops.eye(np.int64(4), np.int64(6), np.int64(-1), "f32"))),
        ("col2im", lambda p: ops.col2im(ops.reshape(p, np.array([2, 12, 6], I64), False), np.array([3, 4], I64),
                                        np.array([2, 2], I64), [1, 1], [1, 1], [0, 0], [0, 0])),
        ("shape_of_v1", lambda p: ov.opset1.shape_of(p)),
        ("topk_v3", lambda p: ov.opset3.topk(p, np.int64(2), 1, "max", "index").output(0)),
        ("gather_v7", lambda p: ov.opset7.gather(p, np.array([1, 0], I64), np.int64(1))),
        ("scatter_elements_v3", lambda p: ov.opset3.scatter_elements_update(p, np.zeros((2, 3, 4, 1), I64),
                                                                            np.ones((2, 3, 4, 1), np.float32),
                                                                            np.int64(3))),
        ("gather_nd_v5", lambda p: ov.opset5.gather_nd(p, np.array([[[1], [0], [3]], [[2], [2], [0]]], I64), 2)),
        ("squeeze_skip", lambda p: ops.squeeze(ops.unsqueeze(p, np.array([1], I64)), np.array([1, 2], I64), True)),
    ]


@pytest.mark.parametrize("name,build", _cases(), ids=[c[0] for c in _cases()])
def test_ir_round_trip_matches_openvino(tmp_path, name, build):
    param = ops.parameter(list(X.shape), ov.Type.f32)
    node = build(param)
    model = ov.Model([node.output(0) if hasattr(node, "output") else node], [param])
    xml = tmp_path / f"{name}.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    want = ov.Core().compile_model(model, "CPU")([X])[0]
    core = vinerun.Core()
    ours = core.read_model(str(xml))
    got = core.compile_model(ours, "CPU").create_infer_request().infer([X]).to_tuple()[0]
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
