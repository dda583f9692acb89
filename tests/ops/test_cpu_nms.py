"""The CPU's vectorized NonMaxSuppression against the op's NumPy reference: the same rows, bit for bit.

Boxes on a coarse grid give many equal scores, equal boxes and IoUs exactly at the threshold; chains of boxes
each overlapping the next take the walk in rank order; a tiny pair budget takes the reference.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.errors import UnsupportedOpError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.nms import NonMaxSuppression
from vinerun.plugins.cpu.kernels import nms, select_kernel

RNG = np.random.default_rng(11)


def make_boxes(batches: int, n: int, grid: float, center: bool = False) -> np.ndarray:
    """Corner boxes (either diagonal order) or center boxes on a grid of step ``grid`` (0: continuous)."""
    def q(v):
        return np.round(v / grid) * grid if grid else v

    a, b = q(RNG.uniform(0, 10, (batches, n, 2))), q(RNG.uniform(0.5, 4, (batches, n, 2)))
    if center:
        return np.concatenate([a, b], axis=-1).astype(np.float32)
    flip = RNG.random((batches, n, 1)) < 0.3
    first, second = a, a + b
    return np.where(flip, np.concatenate([second, first], -1), np.concatenate([first, second], -1)).astype(np.float32)


def make_scores(batches: int, classes: int, n: int, levels: int) -> np.ndarray:
    """Scores in [0, 1): ``levels`` distinct values (ties) or continuous (0)."""
    s = RNG.random((batches, classes, n))
    return (np.floor(s * levels) / levels if levels else s).astype(np.float32)


def nms_node(batches, classes, n, *, encoding="corner", descending=True, output_type=Type.i64, score_type=Type.f32,
             with_sigma=False):
    params = [Parameter(Type.f32, [batches, n, 4]), Parameter(score_type, [batches, classes, n]),
              Parameter(Type.i64, []), Parameter(Type.f32, []), Parameter(Type.f32, [])]
    if with_sigma:
        params.append(Parameter(Type.f32, []))
    return NonMaxSuppression(*params, box_encoding=encoding, sort_result_descending=descending,
                             output_type=output_type)


def check(node, inputs):
    kernel = select_kernel(node)
    assert kernel.exec_type == "vectorized_nms"
    got, want = kernel.fn(inputs), node.evaluate(inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return got


def scalars(max_per_class, iou, score):
    return [np.array(max_per_class, np.int64), np.array(iou, np.float32), np.array(score, np.float32)]


@pytest.mark.parametrize(("batches", "classes", "n"), [(1, 1, 40), (2, 3, 60), (1, 5, 300), (3, 2, 1)])
@pytest.mark.parametrize("encoding", ["corner", "center"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(("grid", "levels"), [(0.0, 0), (0.5, 4)])  # continuous, or many ties
def test_matches_the_reference(batches, classes, n, encoding, descending, grid, levels):
    node = nms_node(batches, classes, n, encoding=encoding, descending=descending)
    boxes, scores = make_boxes(batches, n, grid, encoding == "center"), make_scores(batches, classes, n, levels)
    for args in [(n, 0.5, -np.inf), (5, 0.3, 0.25), (2 ** 62, 0.0, 0.5), (1, 0.7, 0.0), (0, 0.5, 0.0),
                 (n, 1.0, 0.1), (3, np.nan, 0.2)]:
        check(node, [boxes, scores, *scalars(*args)])


@pytest.mark.parametrize("output_type", [Type.i32, Type.i64])
@pytest.mark.parametrize("score_type", [Type.f32, Type.f16, Type.bf16])
def test_output_and_score_types(output_type, score_type):
    node = nms_node(2, 2, 50, output_type=output_type, score_type=score_type)
    scores = make_scores(2, 2, 50, 8).astype(ml_dtypes.bfloat16 if score_type == Type.bf16 else score_type.to_dtype())
    got = check(node, [make_boxes(2, 50, 0.5), scores, *scalars(10, 0.4, 0.1)])
    assert got[0].dtype == output_type.to_dtype() and got[1].dtype == scores.dtype


def test_iou_exactly_at_the_threshold():
    # box 1 overlaps box 0 by exactly one half (IoU 1/3); box 2 equals box 0; all scores tie
    boxes = np.array([[[0, 0, 1, 1], [0, 0.5, 1, 1.5], [0, 0, 1, 1], [0, 1, 1, 2]]], np.float32)
    scores = np.full((1, 1, 4), 0.5, np.float32)
    node = nms_node(1, 1, 4, descending=False)
    for iou in [1 / 3, np.nextafter(np.float32(1 / 3), 0), 0.0, 1.0]:
        check(node, [boxes, scores, *scalars(10, iou, 0.0)])
    check(node, [boxes, scores, *scalars(10, 0.5, 0.5)])  # nothing above a score equal to every score


def test_degenerate_and_non_finite_boxes():
    boxes = np.array([[[0, 0, 0, 1], [0, 0, 1, 1], [np.nan, 0, 1, 1], [0, 0, 1, 1], [-np.inf, 0, np.inf, 1],
                       [0, 0, 1, 1]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.6, 0.5, np.nan]]], np.float32)
    check(nms_node(1, 1, 6), [boxes, scores, *scalars(10, 0.5, -np.inf)])


def test_long_chains_take_the_walk_in_rank_order():
    n = 3 * nms._SWEEPS  # box k overlaps boxes k - 1 and k + 1 only (IoU 0.2): each keeps or frees the next
    x = np.arange(n, dtype=np.float32)
    boxes = np.stack([np.zeros(n), x, np.ones(n), x + 1.5], axis=-1)[None].astype(np.float32)
    scores = np.linspace(1, 0.5, n, dtype=np.float32)[None, None]
    got = check(nms_node(1, 1, n, descending=False), [boxes, scores, *scalars(n, 0.1, 0.0)])
    assert got[0][:, 2].tolist() == list(range(0, n, 2))


def test_small_quota_grows_the_rank_prefix():
    n = 2000  # 2000 copies of 10 boxes: each class selects at most 10, found after the first prefixes
    boxes = np.tile(make_boxes(1, 10, 0.0), (1, n // 10, 1))
    node = nms_node(1, 3, n)
    check(node, [boxes, make_scores(1, 3, n, 0), *scalars(8, 0.5, 0.0)])
    check(node, [boxes, make_scores(1, 3, n, 0), *scalars(12, 0.5, 0.0)])  # quota above what exists


def test_beyond_the_pair_budget_the_reference_runs(monkeypatch):
    monkeypatch.setattr(nms, "_PAIR_BUDGET", 3)
    check(nms_node(1, 2, 30), [make_boxes(1, 30, 0.0), make_scores(1, 2, 30, 0), *scalars(30, 0.5, 0.0)])


def test_reference_cases():
    node = nms_node(1, 1, 20, with_sigma=True)
    inputs = [make_boxes(1, 20, 0.0), make_scores(1, 1, 20, 0), *scalars(20, 0.5, 0.0)]
    check(node, inputs + [np.array(0.0, np.float32)])
    check(node, inputs[:3] + [np.array(-0.5, np.float32), inputs[4], np.array(0.0, np.float32)])  # top box only
    with pytest.raises(UnsupportedOpError, match="soft NMS"):
        select_kernel(node).fn(inputs + [np.array(0.5, np.float32)])
    empty = nms_node(2, 3, 0)
    check(empty, [np.zeros((2, 0, 4), np.float32), np.zeros((2, 3, 0), np.float32), *scalars(5, 0.5, 0.0)])


def test_compiled_model_runs_the_kernel():
    boxes, scores = Parameter(Type.f32, [1, 200, 4]), Parameter(Type.f32, [1, 4, 200])
    node = NonMaxSuppression(boxes, scores, Constant(np.array([50], np.int64)), Constant(np.array([0.45], np.float32)),
                             Constant(np.array(0.2, np.float32)), sort_result_descending=False)
    model = Model([node.output(0), node.output(1), node.output(2)], [boxes, scores])
    inputs = [make_boxes(1, 200, 0.0), make_scores(1, 4, 200, 0)]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(inputs)
    for i, want in enumerate(run_reference(model, inputs)):
        np.testing.assert_array_equal(got[i], want)
    assert {s.node.type_name: s.kernel.exec_type for s in compiled._impl.plan.steps}["NonMaxSuppression"] == \
        "vectorized_nms"
