"""ClassTopKFusion and its kernel: a detection head's per-class loop as torch.onnx writes it out (torchvision's SSD
post-process: per class a column, a threshold, ``x[mask]``, ``topk(min(k, n))``, the boxes under the same mask,
``full_like(score, label)``; three Concats) becomes one ClassTopK whose outputs are the loop's, ties and empty
classes included; a loop that reads a value elsewhere stays as it is."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.broadcast import Broadcast
from vinerun.ops.comparison import Greater
from vinerun.ops.concat_split import Concat
from vinerun.ops.gather import Gather, GatherND
from vinerun.ops.reduction import ReduceMin
from vinerun.ops.reshape import Reshape, Unsqueeze
from vinerun.ops.shape_of import ShapeOf
from vinerun.ops.topk_unique import NonZero, TopK
from vinerun.ops.transpose import Transpose

F32 = {"INFERENCE_PRECISION_HINT": "f32", "CPU_RUNTIME_CACHE_CAPACITY": 0}
RNG = np.random.default_rng(9)
N, C, K = 50, 6, 4


def i64(*values):
    return Constant(np.array(values, np.int64))


def scalar(value, dtype=np.int64):
    return Constant(np.array(value, dtype))


def masked(data, mask):
    """``data[mask]`` as torch.onnx writes it."""
    return GatherND(data, Transpose(NonZero(mask), i64(1, 0)))


def detection_loop(classes=range(1, C), threshold=0.3, extra_reader=False) -> Model:
    scores, boxes = Parameter(Type.f32, [N, C]), Parameter(Type.f32, [N, 4])
    parts = [[], [], []]
    for c in classes:
        column = Gather(scores, scalar(c), scalar(1))
        keep = Greater(column, scalar(threshold, np.float32))
        kept = masked(column, keep)
        count = Unsqueeze(Gather(ShapeOf(kept), scalar(0), scalar(0)), i64(0))
        smallest = ReduceMin(Concat([i64(K), count], axis=0), i64(0))
        k = Reshape(Reshape(smallest, i64(1)), Constant(np.zeros(0, np.int64)))
        top = TopK(kept, k, axis=-1, mode="max", sort="value", index_element_type=Type.i64)
        parts[0].append(top.output(0))
        parts[1].append(Gather(masked(boxes, keep), top.output(1), scalar(0)).output(0))
        parts[2].append(Broadcast(scalar(c), ShapeOf(top.output(0))).output(0))
    outputs = [Concat(p, axis=0).output(0) for p in parts]
    if extra_reader:  # the last class's mask read outside the loop
        outputs.append(keep.output(0))
    return Model(outputs, [scores, boxes])


def inputs(ties=False):
    scores = RNG.random((N, C)).astype(np.float32)
    if ties:  # few distinct values: equal scores inside and at the edge of the top k
        scores = np.round(scores * 4) / 4
    scores[:, 2] = 0.1  # a class with nothing above the threshold
    return [scores, RNG.standard_normal((N, 4)).astype(np.float32)]


def plan_types(compiled):
    return [s.node.type_name for s in compiled._impl.plan.steps]


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_the_loop_becomes_one_class_topk_with_the_same_outputs(ties, precision):
    model = detection_loop()
    data = inputs(ties)
    want = run_reference(model, data)
    compiled = ov.Core().compile_model(model, "CPU", {**F32, "INFERENCE_PRECISION_HINT": precision})
    types = plan_types(compiled)
    assert "ClassTopK" in types and "TopK" not in types and "NonZero" not in types
    got = compiled.create_infer_request().infer(data)
    for g, w in zip(got.values(), want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_more_kept_scores_than_k_and_fewer():
    model = detection_loop(threshold=0.0)  # every score kept: k of each class
    data = inputs()
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(data)
    want = run_reference(model, data)
    assert got[0].shape == ((C - 1) * K,)  # k of each class
    for g, w in zip(got.values(), want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_a_loop_whose_mask_is_read_elsewhere_stays():
    model = detection_loop(extra_reader=True)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    assert "ClassTopK" not in plan_types(compiled)
    data = inputs()
    for g, w in zip(compiled.create_infer_request().infer(data).values(), run_reference(model, data), strict=True):
        np.testing.assert_array_equal(g, w)


def test_the_reference_and_the_kernel_agree_on_negative_zeros_and_ties():
    from vinerun.plugins.cpu.fused_ops import ClassTopK
    from vinerun.plugins.cpu.kernels import select_kernel

    node = ClassTopK(Parameter(Type.f32, [-1, 3]), Parameter(Type.f32, [-1, 2]), columns=[0, 2], labels=[5, 7],
                     threshold=-1.0, k=3)
    scores = np.array([[0.0, 9, -0.0], [-0.0, 9, 0.5], [0.5, 9, 0.0], [0.0, 9, -0.5], [-3, 9, 0.5]], np.float32)
    boxes = np.arange(10, dtype=np.float32).reshape(5, 2)
    want = node.evaluate([scores, boxes])
    got = select_kernel(node).fn([scores, boxes])
    assert want[2].tolist() == [5, 5, 5, 7, 7, 7]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_calls_after_a_tie_take_the_exact_keys_and_agree():
    from vinerun.plugins.cpu.fused_ops import ClassTopK
    from vinerun.plugins.cpu.kernels import select_kernel

    node = ClassTopK(Parameter(Type.f32, [-1, C]), Parameter(Type.f32, [-1, 4]), columns=list(range(1, C)),
                     labels=list(range(1, C)), threshold=0.3, k=K)
    kernel = select_kernel(node)
    for ties in (False, True, False, True):  # the second call switches the kernel to the keys
        data = inputs(ties)
        for g, w in zip(kernel.fn(data), node.evaluate(data), strict=True):
            np.testing.assert_array_equal(g, w)
