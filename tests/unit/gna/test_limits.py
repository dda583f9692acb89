"""Every GNA limit of specs/gna.md §4, per compile target: just inside passes, just outside fails.

Each case builds a tiny model with the opset builders; the failure must carry the documented
wording, the layer's name and the compile target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.types import Type
from vinerun.plugins.gna.limits import LIMITS, GNALimitError, MiB, check_model, target_name
from vinerun.properties.intel_gna import HWGeneration

T20, T30, T35 = HWGeneration.GNA_2_0, HWGeneration.GNA_3_0, HWGeneration.GNA_3_5
ALL = [T20, T30, T35]


def const(shape: list[int]) -> ov.Node:
    return ops.constant(np.full(shape, 0.01, np.float32))


def model(*outputs: ov.Node, params: list[ov.Node]) -> ov.Model:
    return ov.Model(list(outputs), params, "m")


def fc(batch: int, k: int = 16) -> ov.Model:
    x = ops.parameter([batch, k], name="x")
    return model(ops.sigmoid(ops.matmul(x, const([k, 8]), False, False, name="fc")), params=[x])


def conv1d(filters: int = 8, c: int = 8, k: int = 3, n: int = 1, dilation: int = 1, w: int = 32) -> ov.Model:
    x = ops.parameter([n, c, w], name="x")
    y = ops.convolution(x, const([filters, c, k]), [1], [0], [0], [dilation], name="conv")
    return model(y, params=[x])


def conv2d(c: int = 8, h: int = 16, w: int = 16, kernels: int = 8, kh: int = 3, kw: int = 3,
           stride: tuple[int, int] = (1, 1), pads: tuple[list[int], list[int]] = ([0, 0], [0, 0])) -> ov.Model:
    x = ops.parameter([1, c, h, w], name="x")
    y = ops.convolution(x, const([kernels, c, kh, kw]), list(stride), pads[0], pads[1], [1, 1], name="conv")
    return model(y, params=[x])


def pool(window: list[int], shape: list[int]) -> ov.Model:
    x = ops.parameter(shape, name="x")
    ones, zeros = [1] * len(window), [0] * len(window)
    y = ops.max_pool(x, window, ones, zeros, zeros, window, name="pool")  # strides, dilations, pads, kernel
    return model(y.output(0), params=[x])


def relu_chain(n: int) -> ov.Model:
    x = ops.parameter([1, 8], name="x")
    y = x
    for _ in range(n):
        y = ops.relu(y)
    return model(y, params=[x])


def inner_transpose(rows: int, cols: int) -> ov.Model:
    x = ops.parameter([1, rows * cols], name="x")
    a = ops.relu(ops.matmul(x, const([rows * cols, rows * cols]), False, False))
    t = ops.transpose(ops.reshape(a, ops.constant(np.array([rows, cols], np.int64)), False),
                      ops.constant(np.array([1, 0], np.int64)), name="tr")
    b = ops.relu(ops.reshape(t, ops.constant(np.array([1, rows * cols], np.int64)), False))
    return model(ops.matmul(b, const([rows * cols, 8]), False, False), params=[x])


def concat(batch: int) -> ov.Model:
    a, b = ops.parameter([batch, 8], name="a"), ops.parameter([batch, 8], name="b")
    return model(ops.relu(ops.concat([ops.relu(a), ops.relu(b)], 1, name="cat")), params=[a, b])


def split(batch: int) -> ov.Model:
    x = ops.parameter([batch, 16], name="x")
    s = ops.split(ops.relu(x), ops.constant(np.int64(1)), 2, name="sp")
    return model(ops.relu(s.output(0)), ops.relu(s.output(1)), params=[x])


def eltwise(b_shape: list[int]) -> ov.Model:
    a, b = ops.parameter([1, 8], name="a"), ops.parameter(b_shape, name="b")
    return model(ops.add(ops.relu(a), ops.relu(b), name="add"), params=[a, b])


def state(batch: int) -> ov.Model:
    x = ops.parameter([batch, 8], name="x")
    rv = ops.read_value(ops.constant(np.zeros((batch, 8), np.float32)), "mem", name="rv")
    y = ops.add(x, rv)
    return ov.Model([y], [ops.assign(y, rv.get_variable(), name="as")], [x], "m")


def cell(kind: str, batch: int) -> ov.Model:
    x = ops.parameter([batch, 8], name="x")
    h = ops.constant(np.zeros((batch, 8), np.float32))
    gates = 4 if kind == "lstm" else 3
    w, r, b = const([gates * 8, 8]), const([gates * 8, 8]), const([gates * 8])
    if kind == "lstm":
        y = ops.lstm_cell(x, h, ops.constant(np.zeros((batch, 8), np.float32)), w, r, b, hidden_size=8, name="cell")
    else:
        y = ops.gru_cell(x, h, w, r, b, hidden_size=8, name="cell")
    return model(y.output(0), params=[x])


def input_type(et: Type) -> ov.Model:
    x = ops.parameter([1, 16], et, name="x")
    return model(ops.matmul(ops.convert(x, Type.f32), const([16, 8]), False, False), params=[x])


# (case id, targets, build(inside: bool) -> Model, precision, expected message fragment)
Case = tuple[str, list[HWGeneration], Callable[[bool], ov.Model], str, str]
CASES: list[Case] = [
    ("fc batch", ALL, lambda ok: fc(8 if ok else 9), "i16",
     "topology with layer: fc, type: MatMul, and batch size(9) not supported"),
    ("fc vector length", ALL, lambda ok: fc(1, 65528 if ok else 65529), "i16", "input vector length 65529"),
    ("conv batch", ALL, lambda ok: conv1d(n=1 if ok else 2), "i16",
     "topology with layer: conv, type: Convolution, and batch size(2) not supported"),
    ("lstm batch", ALL, lambda ok: cell("lstm", 1 if ok else 2), "i16",
     "topology with layer: cell, type: LSTMCell, and batch size(2) not supported"),
    ("gru batch", ALL, lambda ok: cell("gru", 1 if ok else 2), "i16",
     "topology with layer: cell, type: GRUCell, and batch size(2) not supported"),
    ("state batch", ALL, lambda ok: state(1 if ok else 2), "i16", "type: ReadValue, and batch size(2) not supported"),
    ("layers 2.0", [T20], lambda ok: relu_chain(4096 if ok else 4097), "i16", "at most 4096 layers"),
    ("layers 3.x", [T30, T35], lambda ok: relu_chain(8192 if ok else 8193), "i16", "at most 8192 layers"),
    ("conv1d dilation", ALL, lambda ok: conv1d(dilation=1 if ok else 2), "i16", "Unsupported dilation [2]"),
    ("conv1d filters max 2.0", [T20], lambda ok: conv1d(filters=65532 if ok else 65536, k=1, w=8), "i16",
     "Unsupported number of filters, actual value: 65536, valid range [4, 65532], a multiple of 4"),
    ("conv1d filters min", [T20, T30], lambda ok: conv1d(filters=4 if ok else 3), "i16",
     "Unsupported number of filters, actual value: 3"),
    ("conv1d filters multiple", [T20, T30], lambda ok: conv1d(filters=12 if ok else 10), "i16",
     "actual value: 10, valid range [4,"),
    ("conv1d filters max 3.0", [T30], lambda ok: conv1d(filters=8192 if ok else 8196, k=1, w=8), "i16",
     "Unsupported number of filters, actual value: 8196, valid range [4, 8192]"),
    ("conv1d filters max 3.5", [T35], lambda ok: conv1d(filters=8192 if ok else 8193, k=1, w=8), "i16",
     "Unsupported number of filters, actual value: 8193, valid range [1, 8192]"),
    ("conv1d coefficients 2.0/3.0", [T20, T30], lambda ok: conv1d(c=96 if ok else 97, k=8), "i16",
     "valid range [8, 768]"),
    ("conv1d kernel 3.5 i16", [T35], lambda ok: conv1d(c=1, k=2048 if ok else 2049, w=4096), "i16",
     "valid range [8, 2048]"),
    ("conv1d kernel 3.5 i8", [T35], lambda ok: conv1d(c=1, k=4096 if ok else 4097, w=8192), "i8",
     "valid range [8, 4096]"),
    ("pool1d 2.0/3.0", [T20, T30], lambda ok: pool([1, 6 if ok else 7], [1, 8, 1, 32]), "i16",
     "Unsupported pooling window 7"),
    ("pool1d 3.5", [T35], lambda ok: pool([255 if ok else 256], [1, 8, 512]), "i16", "Unsupported pooling window 256"),
    ("conv2d on 2.0", [T20], lambda ok: conv1d() if ok else conv2d(), "i16",
     "The plugin does not support layer conv (type Convolution2D)!"),
    ("pool2d on 2.0", [T20], lambda ok: pool([1, 2], [1, 8, 1, 4]) if ok else pool([2, 2], [1, 8, 4, 4]), "i16",
     "The plugin does not support layer pool (type MaxPool 2D)!"),
    ("conv2d H min 3.0", [T30], lambda ok: conv2d(h=16 if ok else 15), "i16",
     "Layer Convolution2D: conv:Unsupported input height, actual value: 15, valid range [16, 384]"),
    ("conv2d H max 3.0", [T30], lambda ok: conv2d(h=384 if ok else 385), "i16", "input height, actual value: 385"),
    ("conv2d W min 3.0", [T30], lambda ok: conv2d(w=16 if ok else 15), "i16",
     "Unsupported input width, actual value: 15, valid range [16, 240]"),
    ("conv2d W max 3.0", [T30], lambda ok: conv2d(w=240 if ok else 241), "i16", "input width, actual value: 241"),
    ("conv2d C max 3.0", [T30], lambda ok: conv2d(c=384 if ok else 392, kw=1), "i16",
     "Unsupported number of input channels, actual value: 392, valid range [8, 384], multiple of 8"),
    ("conv2d C multiple 3.0", [T30], lambda ok: conv2d(c=16 if ok else 12), "i16",
     "number of input channels, actual value: 12"),
    ("conv2d kernels max 3.0", [T30], lambda ok: conv2d(kernels=1024 if ok else 1032), "i16",
     "Unsupported number of kernels, actual value: 1032, valid range [8, 1024], multiple of 8"),
    ("conv2d kernels min 3.0", [T30], lambda ok: conv2d(kernels=8 if ok else 4), "i16",
     "number of kernels, actual value: 4"),
    ("conv2d kernel 7x7 i16 3.0", [T30], lambda ok: conv2d(c=48 if ok else 56, kh=7, kw=7), "i16",
     "Unsupported kernel width, actual value: 7, valid range [1, 5]"),
    ("conv2d kernel 7x1 i16 3.0", [T30], lambda ok: conv2d(c=384, kh=7, kw=1 if ok else 2), "i16",
     "Unsupported kernel width, actual value: 2, valid range [1, 1]"),
    ("conv2d kernel height 3.0", [T30], lambda ok: conv2d(kh=7 if ok else 8, kw=1), "i16",
     "Unsupported kernel height, actual value: 8, valid range [1, 7]"),
    ("conv2d kernel 7x7 i8 3.0", [T30], lambda ok: conv2d(c=96 if ok else 104, kh=7, kw=7), "i8",
     "Unsupported kernel width, actual value: 7, valid range [1, 5]"),
    ("conv2d kernel 7x2 i8 3.0", [T30], lambda ok: conv2d(c=384, kh=7, kw=2 if ok else 3), "i8",
     "Unsupported kernel width, actual value: 3, valid range [1, 2]"),
    ("conv2d stride 3.0", [T30], lambda ok: conv2d(stride=(3, 3) if ok else (3, 4)), "i16",
     "Unsupported convolution stride width, actual value: 4, valid range [1, 3]"),
    ("pool2d 3.0", [T30], lambda ok: pool([3, 3] if ok else [4, 4], [1, 8, 16, 16]), "i16",
     "Unsupported pooling window 4x4"),
    ("pool2d square 3.0", [T30], lambda ok: pool([2, 2] if ok else [2, 3], [1, 8, 16, 16]), "i16",
     "Unsupported pooling window 2x3"),
    ("conv2d H max 3.5", [T35], lambda ok: conv2d(c=1, h=65535 if ok else 65536, w=1, kh=1, kw=1, kernels=1), "i16",
     "Unsupported input height, actual value: 65536, valid range [1, 65535]"),
    ("conv2d W max 3.5", [T35], lambda ok: conv2d(c=1, h=2, w=65535 if ok else 65536, kh=1, kw=1, kernels=1), "i16",
     "Unsupported input width, actual value: 65536, valid range [1, 65535]"),
    ("conv2d C i16 3.5", [T35], lambda ok: conv2d(c=1024 if ok else 1025, kh=1, kw=1), "i16",
     "number of input channels, actual value: 1025, valid range [1, 1024]"),
    ("conv2d C i8 3.5", [T35], lambda ok: conv2d(c=2048 if ok else 2049, kh=1, kw=1), "i8",
     "number of input channels, actual value: 2049, valid range [1, 2048]"),
    ("conv2d kernels 3.5", [T35], lambda ok: conv2d(c=1, kernels=8192 if ok else 8193, kh=1, kw=1), "i16",
     "number of kernels, actual value: 8193, valid range [1, 8192]"),
    ("conv2d kernel height 3.5", [T35], lambda ok: conv2d(c=1, h=300, w=2, kh=255 if ok else 256, kw=1), "i16",
     "Unsupported kernel height, actual value: 256, valid range [1, 255]"),
    ("conv2d kernel width 3.5", [T35], lambda ok: conv2d(c=1, h=2, w=300, kh=2, kw=256 if ok else 257), "i16",
     "Unsupported kernel width, actual value: 257, valid range [1, 256]"),
    ("conv2d symmetric padding 3.5", [T35], lambda ok: conv2d(pads=([1, 1], [1, 1]) if ok else ([1, 1], [0, 0])),
     "i16", "Unsupported padding [1, 1]/[0, 0]"),
    ("conv2d padding < kernel 3.5", [T35], lambda ok: conv2d(pads=([2, 2], [2, 2]) if ok else ([3, 3], [3, 3])),
     "i16", "Unsupported padding [3, 3]/[3, 3] for kernel 3x3"),
    ("pool2d 3.5", [T35], lambda ok: pool([255, 255] if ok else [256, 256], [1, 1, 512, 512]), "i16",
     "Unsupported pooling window 256x256"),
    ("transpose min dim", ALL, lambda ok: inner_transpose(8 if ok else 9, 64), "i16",
     "The plugin does not support layer tr (type Transpose)!"),
    ("transpose max dim multiple", ALL, lambda ok: inner_transpose(8, 64 if ok else 60), "i16",
     "The plugin does not support layer tr (type Transpose)!"),
    ("concat axis", ALL, lambda ok: concat(1 if ok else 2), "i16", "cat Unsupported concatenation axis=1"),
    ("split axis", ALL, lambda ok: split(1 if ok else 2), "i16", "sp Unsupported split axis=1"),
    ("eltwise broadcast", ALL, lambda ok: eltwise([1, 8] if ok else [1, 1]), "i16",
     "add: Inputs size mismatch (note: For Multiply, Add and Subtract layers, auto broadcasting is only "
     "supported for constant inputs)"),
    ("input precision", ALL, lambda ok: input_type(Type.i16 if ok else Type.i32), "i16",
     "The plugin does not support input precision with i32 format"),
]


def _params() -> list:
    return [pytest.param(name, t, build, prec, msg, id=f"{name}-{target_name(t)}")
            for name, targets, build, prec, msg in CASES for t in targets]


@pytest.mark.parametrize(("name", "target", "build", "precision", "message"), _params())
def test_limit_inside_passes_outside_fails(name: str, target: HWGeneration, build: Callable[[bool], ov.Model],
                                           precision: str, message: str) -> None:
    check_model(build(True), target, precision)
    with pytest.raises(GNALimitError) as info:
        check_model(build(False), target, precision)
    text = str(info.value)
    assert message in text
    assert f"compile target {target_name(target)}" in text


@pytest.mark.parametrize("target", ALL, ids=target_name)
def test_memory_limit_is_256_mb_and_enforced(target: HWGeneration) -> None:
    assert LIMITS[target].max_memory_bytes == 256 * MiB
    m = fc(1, 64)  # 64x8 i16 weights (1024 B) + 8 int16 outputs of fc and sigmoid (32 B)
    check_model(m, target, limits=replace(LIMITS[target], max_memory_bytes=1056))
    with pytest.raises(GNALimitError, match=r"needs 1056 bytes of GNA memory .*model memory at most"):
        check_model(m, target, limits=replace(LIMITS[target], max_memory_bytes=1055))


@pytest.mark.parametrize("target", ALL, ids=target_name)
def test_unsupported_layer_and_input_only(target: HWGeneration) -> None:
    x = ops.parameter([1, 8], name="x")
    with pytest.raises(GNALimitError, match=r"The plugin does not support layer sm \(type Softmax\)!"):
        check_model(model(ops.softmax(x, 1, name="sm"), params=[x]), target)
    with pytest.raises(GNALimitError, match=r"Network consists of input layer only \(GNA\)"):
        check_model(model(ops.reshape(x, ops.constant(np.array([8], np.int64)), False), params=[x]), target)


def test_transpose_at_the_edges_runs_on_cpu() -> None:
    x = ops.parameter([16, 60], name="x")  # not a GNA transpose, but next to the input: pre-processing
    t = ops.transpose(x, ops.constant(np.array([1, 0], np.int64)))
    y = ops.matmul(ops.reshape(t, ops.constant(np.array([1, 960], np.int64)), False), const([960, 8]), False, False)
    for target in ALL:
        check_model(model(y, params=[x]), target)


def test_dynamic_shapes_are_refused() -> None:
    x = ops.parameter([-1, 16], name="x")
    with pytest.raises(GNALimitError, match="dynamic shape"):
        check_model(model(ops.matmul(x, const([16, 8]), False, False), params=[x]), T35)
