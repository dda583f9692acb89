"""Which values the CPU hands on channels-last (kernels/_layout.py): only where every reader takes it; a Concat
takes it along the channels (a CNN's feature concat), not along another axis (a KV cache grown along its
sequence axis, whose oneDNN concat of channels-last parts is a reference loop)."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun.ir.core_ops import Parameter
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.concat_split import Concat
from vinerun.ops.convert import Convert
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.native_segment import Segment


def cache_model(axis: int) -> tuple[Model, Convert]:
    past, new = Parameter(Type.f32, [1, 4, 8, 16]), Parameter(Type.bf16, [1, 1, 8, 16] if axis == 1 else [1, 4, 1, 16])
    grown = Convert(past, destination_type=Type.bf16)
    return Model([Concat([grown, new], axis=axis)], [past, new]), grown


@pytest.mark.parametrize(("axis", "channels_last"), [(2, False), (-2, False), (1, True)])
def test_a_concat_takes_channels_last_along_the_channels_only(axis, channels_last):
    _, grown = cache_model(axis)
    assert keeps_channels_last(grown) is channels_last


@pytest.mark.skipif(library() is None, reason="needs the oneDNN binding")
def test_a_kv_cache_concat_after_a_convert_runs_in_a_segment():
    model, _ = cache_model(2)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    items = compiled._impl.plan.items
    assert len(items) == 1 and isinstance(items[0], Segment)
    past = np.random.default_rng(0).standard_normal((1, 4, 8, 16)).astype(np.float32)
    new = np.ones((1, 4, 1, 16), Type.bf16.to_dtype())
    got = compiled.create_infer_request().infer([past, new])[0]
    want = np.concatenate([past.astype(Type.bf16.to_dtype()), new], axis=2)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16))
