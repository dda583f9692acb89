"""Element-wise oneDNN kernels hand out a rank-3 value in the dimension order they read it (channels-last from a
1-D convolution stays so), so a convolution -> element-wise -> convolution chain runs as one native segment."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ops._segments import check_one_segment
from tests.ops.test_cpu_conv1d_dnnl import conv, rand
from vinerun.ir.core_ops import Parameter
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.unary_math import Abs
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._native import dense_in_order, memory_order

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
F32 = np.dtype(np.float32)


def test_memory_order():
    assert memory_order(((1, 129, 4), (2064, 4, 516), F32)) == (0, 2, 1)  # channels-last
    assert memory_order(((1, 129, 4), (2064, 16, 4), F32)) == (0, 1, 2)
    assert memory_order(((1, 129, 4), (4128, 4, 1032), F32)) is None  # a channel slice: gaps
    assert dense_in_order((1, 129, 4), (0, 2, 1), F32) == ((1, 129, 4), (2064, 4, 516), F32)


def test_channels_last_flows_through_elementwise(monkeypatch):
    x = Parameter(Type.f32, [1, 8, 64])
    y = conv(x, 32, 8, 3, act=None)
    z = Abs(y)
    z = Add(Multiply(z, z), z)
    out = conv(z, 1, 32, 3)  # one channel: its output is C-contiguous too, so the segment ends the model
    seg, _ = check_one_segment(Model([out], [x]), rand([1, 8, 64]), monkeypatch, "Add")
    nwc = ((1, 32, 64), (32 * 64 * 4, 4, 32 * 4), F32)
    assert [s.node.type_name for s in seg.steps] == ["FusedConvolution", "Abs", "Multiply", "Add", "FusedConvolution"]
    made = {b.layout for n in seg.natives for b in n.buffers if b.output}
    assert nwc in made
