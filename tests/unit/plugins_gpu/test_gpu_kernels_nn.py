"""GPU MatMul, Softmax, normalization, Interpolate, attention and recurrent kernels (on torch's CPU device) against
the NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU, check, const, param, rand
from vinerun.ops.grn import GRN
from vinerun.ops.interpolate import Interpolate, Interpolate4
from vinerun.ops.matmul import MatMul
from vinerun.ops.normalization import LRN, MVN, BatchNormInference, NormalizeL2
from vinerun.ops.rnn import GRUSequence, LSTMSequence, RNNSequence
from vinerun.ops.rnn_cells import GRUCell, LSTMCell, RNNCell
from vinerun.ops.sdpa import ScaledDotProductAttention
from vinerun.ops.softmax import LogSoftmax, Softmax
from vinerun.plugins.gpu.kernels import select_kernel

F32 = (1e-5, 1e-5)


@pytest.mark.parametrize(("a", "b", "ta", "tb"), [([2, 3, 4], [4, 5], False, False), ([4, 3], [2, 5, 4], True, True),
                                                  ([4], [2, 4, 3], False, False), ([2, 1, 3, 4], [2, 4], False, True)])
def test_matmul(a, b, ta, tb):
    node = MatMul(param("f32", a), param("f32", b), transpose_a=ta, transpose_b=tb)
    check(node, [rand("f32", a, 1), rand("f32", b, 2)], *F32)


def test_matmul_constant_weight_and_integers_decline():
    w = rand("f32", [5, 4], 2)
    node = MatMul(param("f32", [2, 3, 4]), const(w, np.float32), transpose_b=True)
    check(node, [rand("f32", [2, 3, 4]), w], *F32)
    ints = MatMul(param("i32", [2, 3]), param("i32", [3, 2]))
    assert select_kernel(ints, CPU).exec_type == "host_ref"


@pytest.mark.parametrize("cls", [Softmax, LogSoftmax])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(cls, axis):
    check(cls(param("f32", [3, 4, 5]), axis=axis), [rand("f32", [3, 4, 5])], *F32)


def test_batch_norm():
    stats = [rand("f32", [3], s, 0.5, 2) for s in range(4)]
    node = BatchNormInference(param("f32", [2, 3, 4, 4]), *(param("f32", [3]) for _ in range(4)), epsilon=1e-3)
    check(node, [rand("f32", [2, 3, 4, 4]), *stats], *F32)


@pytest.mark.parametrize(("axes", "variance", "mode"), [
    ([2, 3], True, "inside_sqrt"), ([1, 2, 3], False, "inside_sqrt"), ([1, 3], True, "outside_sqrt"),
    ([-1], True, "inside_sqrt")])
def test_mvn(axes, variance, mode):
    node = MVN(param("f32", [2, 3, 4, 5]), const(axes), normalize_variance=variance, eps=1e-6, eps_mode=mode)
    check(node, [rand("f32", [2, 3, 4, 5]), np.asarray(axes)], 1e-5, 1e-5)


@pytest.mark.parametrize("mode", ["add", "max"])
def test_normalize_l2_grn(mode):
    x = rand("f32", [2, 3, 4])
    check(NormalizeL2(param("f32", [2, 3, 4]), const([1, 2]), eps=1e-4, eps_mode=mode), [x, np.asarray([1, 2])], *F32)
    check(GRN(param("f32", [2, 3, 4]), bias=0.5), [x], *F32)


@pytest.mark.parametrize("size", [3, 4])
def test_lrn(size):
    node = LRN(param("f32", [2, 6, 3, 3]), const([1]), alpha=0.1, beta=0.75, bias=2.0, size=size)
    check(node, [rand("f32", [2, 6, 3, 3]), np.asarray([1])], *F32)


INTERPOLATE = [  # mode, coordinate mode, nearest mode, cube coefficient
    ("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_ceil"),
    ("nearest", "tf_half_pixel_for_nn", "floor"), ("linear", "half_pixel", "floor"),
    ("linear_onnx", "align_corners", "floor"), ("cubic", "half_pixel", "floor"), ("cubic", "align_corners", "floor"),
]


@pytest.mark.parametrize("sizes", [[8, 9], [3, 2]])
@pytest.mark.parametrize("case", INTERPOLATE)
def test_interpolate_sizes(case, sizes):
    mode, ctm, nearest = case
    node = Interpolate(param("f32", [1, 2, 5, 4]), const(sizes), const([2, 3]), mode=mode,
                       shape_calculation_mode="sizes", coordinate_transformation_mode=ctm, nearest_mode=nearest)
    check(node, [rand("f32", [1, 2, 5, 4]), np.asarray(sizes), np.asarray([2, 3])], 1e-5, 1e-5)


@pytest.mark.parametrize("case", INTERPOLATE[:4])
def test_interpolate4_scales(case):
    mode, ctm, nearest = case
    scales = np.asarray([2.0, 1.5], np.float32)
    node = Interpolate4(param("f32", [1, 2, 4, 6]), const([8, 9]), const(scales, np.float32), const([2, 3]),
                        mode=mode, shape_calculation_mode="scales", coordinate_transformation_mode=ctm,
                        nearest_mode=nearest)
    check(node, [rand("f32", [1, 2, 4, 6]), np.asarray([8, 9]), scales, np.asarray([2, 3])], 1e-5, 1e-5)


def test_interpolate_declines_what_torch_computes_otherwise():
    node = Interpolate(param("f32", [1, 2, 5, 4]), const([8, 9]), const([2, 3]), mode="nearest",
                       coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_floor")
    assert select_kernel(node, CPU).exec_type == "host_ref"


@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
def test_sdpa(mask):
    q, k, v = rand("f32", [2, 3, 4, 8], 1, -1, 1), rand("f32", [2, 3, 5, 8], 2, -1, 1), rand("f32", [2, 3, 5, 6], 3)
    args, extra = [q, k, v], []
    if mask == "bool":
        m = rand("boolean", [4, 5], 4)
        m[0] = False  # a row that sees no key: zeros
        args.append(m)
        extra.append(param("boolean", [4, 5]))
    elif mask == "float":
        args.append(rand("f32", [2, 1, 4, 5], 4))
        extra.append(param("f32", [2, 1, 4, 5]))
    node = ScaledDotProductAttention(param("f32", [2, 3, 4, 8]), param("f32", [2, 3, 5, 8]),
                                     param("f32", [2, 3, 5, 6]), *extra, causal=mask == "causal")
    check(node, args, 1e-5, 1e-5)


def test_sdpa_constant_scale():
    q, k, v = rand("f32", [1, 4, 8], 1, -1, 1), rand("f32", [1, 5, 8], 2, -1, 1), rand("f32", [1, 5, 8], 3)
    m = rand("f32", [4, 5], 4)
    node = ScaledDotProductAttention(param("f32", [1, 4, 8]), param("f32", [1, 5, 8]), param("f32", [1, 5, 8]),
                                     param("f32", [4, 5]), const(0.3, np.float32))
    check(node, [q, k, v, m, np.asarray(0.3, np.float32)], 1e-5, 1e-5)


def _weights(gates: int, hidden: int, inputs: int, dirs: int | None = None, bias: int | None = None) -> list:
    lead = [] if dirs is None else [dirs]
    shapes = [[*lead, gates * hidden, inputs], [*lead, gates * hidden, hidden], [*lead, (bias or gates) * hidden]]
    return [rand("f32", shape, 10 + i, -1, 1) for i, shape in enumerate(shapes)]


def test_cells():
    x, h, c = rand("f32", [2, 3], 1, -1, 1), rand("f32", [2, 4], 2, -1, 1), rand("f32", [2, 4], 3, -1, 1)
    ps = [param("f32", [2, 3]), param("f32", [2, 4])]
    W, R, B = _weights(4, 4, 3)
    check(LSTMCell(*ps, param("f32", [2, 4]), *(param("f32", list(a.shape)) for a in (W, R, B)), hidden_size=4,
                   clip=0.5), [x, h, c, W, R, B], 1e-5, 1e-5)
    for lbr in (False, True):
        W, R, B = _weights(3, 4, 3, bias=4 if lbr else 3)
        node = GRUCell(*ps, *(param("f32", list(a.shape)) for a in (W, R, B)), hidden_size=4, linear_before_reset=lbr)
        check(node, [x, h, W, R, B], 1e-5, 1e-5)
    W, R, B = _weights(1, 4, 3)
    node = RNNCell(*ps, *(param("f32", list(a.shape)) for a in (W, R, B)), hidden_size=4, activations=["relu"])
    check(node, [x, h, W, R, B], 1e-5, 1e-5)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_sequences(kind, direction):
    dirs = 2 if direction == "bidirectional" else 1
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    x = rand("f32", [3, 5, 2], 1, -1, 1)
    states = [rand("f32", [3, dirs, 4], 2 + i, -1, 1) for i in range(2 if kind == "LSTM" else 1)]
    lens = np.asarray([5, 2, 0], np.int64)
    args = [x, *states, lens, *_weights(gates, 4, 2, dirs, 4 if kind == "GRU" else None)]
    cls = {"LSTM": LSTMSequence, "GRU": GRUSequence, "RNN": RNNSequence}[kind]
    attrs = {"linear_before_reset": True} if kind == "GRU" else {}
    node = cls(*(param(str(a.dtype).replace("float", "f").replace("int", "i"), list(a.shape)) for a in args),
               hidden_size=4, direction=direction, **attrs)
    check(node, args, 1e-5, 1e-5)


def test_recurrent_activations_with_parameters_decline():
    W, R, B = _weights(1, 4, 3)
    node = RNNCell(param("f32", [2, 3]), param("f32", [2, 4]), *(param("f32", list(a.shape)) for a in (W, R, B)),
                   hidden_size=4, activations=["leakyrelu"], activations_alpha=[0.1])
    assert select_kernel(node, CPU).exec_type == "host_ref"
