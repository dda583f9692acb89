"""GatherND on the CPU and ``x[mask]`` as PyTorch exports it (fused into MaskedGather), against the references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.errors import ValidationError, VinerunError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.comparison import Greater
from vinerun.ops.gather import GatherND, GatherNDV5
from vinerun.ops.topk_unique import NonZero
from vinerun.ops.transpose import Transpose
from vinerun.plugins.cpu.fused_ops import MaskedGather
from vinerun.plugins.cpu.kernels import select_kernel

RNG = np.random.default_rng(3)


def check(node, inputs, exec_type):
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith(exec_type)
    got, want = kernel.fn(inputs), node.evaluate(inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.astype(np.float32) if g.dtype.kind == "V" else g,
                                      w.astype(np.float32) if w.dtype.kind == "V" else w)


@pytest.mark.parametrize(("data_shape", "index_shape"), [((7,), (5, 1)), ((6, 4), (3, 1)), ((6, 4), (2, 3, 2)),
                                                         ((3, 4, 5), (4, 3)), ((3, 4, 5), (0, 2))])
@pytest.mark.parametrize("index_type", [Type.i32, Type.i64])
@pytest.mark.parametrize("version", [GatherND, GatherNDV5])
def test_gather_nd(data_shape, index_shape, index_type, version):
    data = RNG.standard_normal(data_shape).astype(np.float32)
    m = index_shape[-1]
    high = np.array(data_shape[:m])
    indices = RNG.integers(-high, high, index_shape[:-1] + (m,)).astype(index_type.to_dtype())
    node = version(Parameter(Type.f32, data_shape), Parameter(index_type, index_shape))
    check(node, [data, indices], "numpy_gather_nd")


def test_gather_nd_out_of_range_and_other_types():
    node = GatherND(Parameter(Type.bf16, [4, 3]), Parameter(Type.i64, [2, 1]))
    data = RNG.standard_normal((4, 3)).astype(ml_dtypes.bfloat16)
    check(node, [data, np.array([[3], [-4]])], "numpy_gather_nd")
    with pytest.raises(ValidationError, match="out of range"):
        select_kernel(node).fn([data, np.array([[4], [0]])])
    batched = GatherND(Parameter(Type.f32, [2, 4, 3]), Parameter(Type.i64, [2, 5, 1]), batch_dims=1)
    assert select_kernel(batched).exec_type == "ref"


def mask_model(data_shape, mask_of, share_nonzero=False, data_type=Type.f32):
    """``data[mask]`` as torch.onnx writes it: GatherND(data, Transpose(NonZero(mask), [1, 0]))."""
    data = Parameter(data_type, data_shape)
    mask, params = mask_of(data)
    nonzero = NonZero(mask)
    gathered = GatherND(data, Transpose(nonzero, Constant(np.array([1, 0], np.int64))))
    outputs = [gathered.output(0)] + ([nonzero.output(0)] if share_nonzero else [])
    return Model(outputs, [data, *params])


def run_both(model, inputs):
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(inputs)
    for i, want in enumerate(run_reference(model, inputs)):
        assert got[i].dtype == want.dtype and got[i].shape == want.shape
        np.testing.assert_array_equal(got[i], want)
    return {s.node.type_name: s.kernel.exec_type for s in compiled._impl.plan.steps}


@pytest.mark.parametrize(("data_shape", "mask_rank"), [((50,), 1), ((50, 4), 1), ((6, 7, 3), 2), ((6, 7, 3), 3),
                                                       ((6, 0, 3), 2)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_mask_gather_is_fused(data_shape, mask_rank, dynamic):
    def mask_of(data):
        m = Parameter(Type.f32, [-1] * mask_rank if dynamic else data_shape[:mask_rank])
        return Greater(m, Constant(np.array(0.3, np.float32))), [m]

    model = mask_model([-1] * len(data_shape) if dynamic else data_shape, mask_of)
    inputs = [RNG.standard_normal(data_shape).astype(np.float32),
              RNG.standard_normal(data_shape[:mask_rank]).astype(np.float32)]
    kinds = run_both(model, inputs)
    assert kinds.get("MaskedGather") == "numpy_masked_gather" and "GatherND" not in kinds and "NonZero" not in kinds


def test_float_mask_shared_nonzero_and_a_smaller_mask():
    def float_mask(data):
        m = Parameter(Type.f32, [5, 4])
        return m, [m]

    model = mask_model([5, 4, 2], float_mask, share_nonzero=True)  # the NonZero stays for its other reader
    mask = np.array([[0.0, -0.0, np.nan, 1.0]] * 5, np.float32)
    mask[2] = 0.0
    kinds = run_both(model, [RNG.standard_normal((5, 4, 2)).astype(np.float32), mask])
    assert kinds["MaskedGather"] == "numpy_masked_gather" and kinds["NonZero"] == "ref"

    def smaller(data):
        m = Parameter(Type.boolean, [-1, -1])
        return m, [m]

    model = mask_model([6, 4], smaller)  # a mask of a corner of data: the reference's gather
    run_both(model, [RNG.standard_normal((6, 4)).astype(np.float32), RNG.random((3, 4)) > 0.5])
    with pytest.raises(VinerunError, match="out of range"):
        run_both(model, [RNG.standard_normal((6, 4)).astype(np.float32), np.ones((7, 4), bool)])


def test_masked_gather_shapes():
    node = MaskedGather(Parameter(Type.f16, [10, 4, 2]), Parameter(Type.boolean, [10, 4]))
    assert node.get_output_partial_shape(0) == PartialShape([-1, 2])
    assert node.get_output_element_type(0) == Type.f16
    with pytest.raises(ValidationError):
        MaskedGather(Parameter(Type.f32, [4]), Parameter(Type.boolean, [4, 2]))
    with pytest.raises(ValidationError):
        MaskedGather(Parameter(Type.f32, [4]), Parameter(Type.boolean, []))
