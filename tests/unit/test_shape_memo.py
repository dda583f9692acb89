"""Shape arithmetic of a dynamic plan computed once per set of shapes (plugins/cpu/shape_memo.py): the plan groups
ShapeOf and what is computed from it, results stay right as shapes change and come back, a shape that depends
on data (NonZero) is keyed by what it is, and cached values cannot be written."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.concat_split import Concat
from vinerun.ops.convert import Convert
from vinerun.ops.gather import Gather
from vinerun.ops.reshape import Reshape, Unsqueeze
from vinerun.ops.sequence_gen import Range
from vinerun.ops.shape_of import ShapeOf
from vinerun.ops.topk_unique import NonZero
from vinerun.plugins.cpu.shape_memo import ShapeGroup

RNG = np.random.default_rng(2)
NO_SPECIALIZING = {**F32, "CPU_RUNTIME_CACHE_CAPACITY": 0}  # the dynamic plan only


def i64(*values: int) -> Constant:
    return Constant(np.array(values, np.int64))


def scalar(value: int) -> Constant:
    return Constant(np.array(value, np.int64))


def dim(x, i: int):
    return Unsqueeze(Gather(ShapeOf(x), scalar(i), scalar(0)), i64(0))


def heads_model() -> Model:
    """A transformer-style head split: x [batch, seq, 8] -> [batch, seq, 2, 4] with the batch and sequence taken
    from x's shape in the graph, plus position ids Range(0, seq) added to the output."""
    x = Parameter(Type.f32, [-1, -1, 8])
    shape = Concat([dim(x, 0), dim(x, 1), i64(2), i64(4)], axis=0)
    heads = Reshape(Relu(x), shape, special_zero=False)
    positions = Convert(Range(scalar(0), Gather(ShapeOf(x), scalar(1), scalar(0)), scalar(1),
                              output_type=Type.i64), destination_type=Type.f32)
    return Model([Add(heads, Reshape(positions, i64(1, -1, 1, 1), special_zero=False))], [x])


def groups(compiled) -> list[ShapeGroup]:
    return [item for item in compiled._impl.plan.items if isinstance(item, ShapeGroup)]


def test_a_dynamic_models_shape_arithmetic_is_grouped_and_right_as_shapes_change():
    model = heads_model()
    compiled = ov.Core().compile_model(model, "CPU", NO_SPECIALIZING)
    assert groups(compiled), "the ShapeOf / Gather / Concat / Range steps run as a group"
    request = compiled.create_infer_request()
    for shape in ([1, 5, 8], [2, 3, 8], [1, 5, 8], [2, 3, 8], [3, 7, 8]):  # shapes come back: cache hits
        data = RNG.standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(request.infer([data])[0], run_reference(model, [data])[0])


def test_a_shape_that_depends_on_data_is_keyed_by_the_shape_itself(monkeypatch):
    """NonZero's output has as many columns as x has nonzero values: same input shape, other shapes after it."""
    monkeypatch.setattr("vinerun.plugins.cpu.shape_memo.MIN_STEPS", 1)
    x = Parameter(Type.f32, [-1])
    found = NonZero(x, output_type=Type.i64)
    count = Gather(ShapeOf(found), scalar(1), scalar(0))
    scaled = Multiply(Convert(Range(scalar(0), count, scalar(1), output_type=Type.i64),
                              destination_type=Type.f32), Constant(np.float32(2)))
    counted = Convert(Concat([Unsqueeze(count, i64(0))] * 2, axis=0), destination_type=Type.f32)
    model = Model([Concat([scaled, counted], axis=0)], [x])
    compiled = ov.Core().compile_model(model, "CPU", NO_SPECIALIZING)
    assert groups(compiled)
    request = compiled.create_infer_request()
    for data in ([0, 1, 0, 2], [3, 1, 0, 2], [0, 0, 0, 2], [3, 1, 0, 2]):
        data = np.array(data, np.float32)
        np.testing.assert_array_equal(request.infer([data])[0], run_reference(model, [data])[0])


def test_cached_values_are_read_only():
    model = heads_model()
    compiled = ov.Core().compile_model(model, "CPU", NO_SPECIALIZING)
    compiled.create_infer_request().infer([RNG.standard_normal([2, 3, 8]).astype(np.float32)])
    for group in groups(compiled):
        for values in group._cache.values():
            for v in values:
                if isinstance(v, np.ndarray) and v.size:
                    with pytest.raises(ValueError):
                        v.reshape(-1)[0] = 1


def test_a_kv_cache_concat_and_head_transpose_of_dynamic_shapes_run_numpy_kernels():
    """A decoder step: past [B, H, L, D] with the new token's head split concatenated; L grows every call."""
    from vinerun.ops.transpose import Transpose

    past = Parameter(Type.f32, [1, 2, -1, 4])
    new = Parameter(Type.f32, [1, -1, 2, 4])
    cache = Concat([past, Transpose(new, i64(0, 2, 1, 3))], axis=2)
    model = Model([Relu(cache)], [past, new])
    compiled = ov.Core().compile_model(model, "CPU", NO_SPECIALIZING)
    kinds = {s.node.type_name: s.kernel.exec_type for s in compiled._impl.plan.steps}
    assert kinds["Concat"] == "numpy_concat" and kinds["Transpose"] == "numpy_transpose"
    request = compiled.create_infer_request()
    for length in (3, 4, 5):
        feed = [RNG.standard_normal([1, 2, length, 4]).astype(np.float32),
                RNG.standard_normal([1, 1, 2, 4]).astype(np.float32)]
        np.testing.assert_array_equal(request.infer(feed)[0], run_reference(model, feed)[0])
