"""Imaging translators end to end: small ONNX models through the public API, onnxruntime as the oracle.

Covers paths the ONNX backend suite leaves out: Resize-10/11/13 and Upsample, run-time scales and
sizes, DFT with dft_length and a run-time negative axis, STFT with only a frame length or a 2-D signal,
RoiAlign-10.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import vinerun as ov
from vinerun.errors import UnsupportedOpError

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(7)


def _run_both(node: onnx.NodeProto, feeds: dict, opset: int, out_type: int = TensorProto.FLOAT,
              inits: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", out_type, None)],
                              list(inits))
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8).SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    core = ov.Core()
    got = core.compile_model(core.read_model(data), "CPU").create_infer_request().infer(feeds).to_tuple()[0]
    return got, want


def _init(name: str, value: np.ndarray) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(value, name)


X = RNG.standard_normal((1, 2, 5, 7)).astype(np.float32)

_RESIZE_CASES = [
    (10, "Resize", {"mode": "nearest"}, [("s", np.array([1, 1, 2, 1.5], np.float32))]),
    (10, "Resize", {"mode": "linear"}, [("s", np.array([1, 1, 0.6, 2], np.float32))]),
    (9, "Upsample", {"mode": "nearest"}, [("s", np.array([1, 1, 2, 3], np.float32))]),
    (11, "Resize", {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"},
     [("roi", np.array([], np.float32)), ("s", np.array([], np.float32)), ("sz", np.array([1, 2, 8, 3], np.int64))]),
    (11, "Resize", {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
     [("roi", np.array([], np.float32)), ("s", np.array([1, 1, 1.5, 0.5], np.float32))]),
    (13, "Resize", {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
     [("roi", None), ("s", None), ("sz", np.array([1, 2, 1, 9], np.int64))]),
    (18, "Resize", {"mode": "linear", "antialias": 1, "axes": [2, 3]},
     [("roi", None), ("s", np.array([0.6, 0.45], np.float32))]),
]


@pytest.mark.parametrize("opset, op, attrs, extra", _RESIZE_CASES)
@pytest.mark.parametrize("constant", [True, False])
def test_resize_matches_onnxruntime(opset, op, attrs, extra, constant):
    names = [name if value is not None else "" for name, value in extra]
    feeds, inits = {"x": X}, []
    for name, value in extra:
        if value is None:
            continue
        if constant or value.size == 0:
            inits.append(_init(name, value))
        else:
            feeds[name] = value
    node = helper.make_node(op, ["x", *names], ["y"], **attrs)
    got, want = _run_both(node, feeds, opset, inits=tuple(inits))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_dft_length_and_runtime_negative_axis():
    x = RNG.standard_normal((2, 8, 6, 1)).astype(np.float32)
    node = helper.make_node("DFT", ["x", "n", "a"], ["y"])
    feeds = {"x": x, "n": np.array(10, np.int64), "a": np.array(-3, np.int64)}
    got, want = _run_both(node, feeds, 20)
    assert got.shape == want.shape == (2, 10, 6, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_stft_with_frame_length_only():
    signal = RNG.standard_normal((2, 64, 1)).astype(np.float32)
    node = helper.make_node("STFT", ["s", "step", "", "len"], ["y"])
    got, want = _run_both(node, {"s": signal, "step": np.array(5, np.int64), "len": np.array(12, np.int64)}, 17)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("frame_length", [True, False])
def test_stft_of_a_two_dimensional_signal(frame_length):
    """torch's exporter gives STFT a real signal as [batch, length], without the trailing 1 (and a window, with
    or without the frame length)."""
    signal = RNG.standard_normal((2, 100)).astype(np.float32)
    node = helper.make_node("STFT", ["s", "step", "w", "len" if frame_length else ""], ["y"])
    inits = (_init("w", np.hanning(16).astype(np.float32)),) + ((_init("len", np.array(16, np.int64)),)
                                                               if frame_length else ())
    got, want = _run_both(node, {"s": signal, "step": np.array(7, np.int64)}, 17, inits=inits)
    assert got.shape == want.shape == (2, 13, 9, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, message", [([2, 64, 2], "complex signals"), ([2, 64, 3], "only real signals"),
                                            ([64], "only real signals")])
def test_stft_rejects_what_it_does_not_take(shape, message):
    node = helper.make_node("STFT", ["s", "step", "", "len"], ["y"], name="my_stft")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("s", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [_init("step", np.array(4, np.int64)), _init("len", np.array(8, np.int64))])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
    with pytest.raises(UnsupportedOpError, match=f"my_stft.*{message}"):
        ov.Core().read_model(data)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_opset10_output_half_pixel(mode):
    x = RNG.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = np.array([[0, 0, 5, 5], [1.3, 2.1, 9.7, 8.2]], np.float32)
    node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], mode=mode, output_height=3, output_width=4,
                            sampling_ratio=1, spatial_scale=0.8)
    got, want = _run_both(node, {"x": x, "r": rois, "b": np.array([0, 1], np.int64)}, 10)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_matmul_integer_per_column_zero_point():
    a = RNG.integers(0, 255, (2, 3, 4)).astype(np.uint8)
    b = RNG.integers(0, 255, (4, 5)).astype(np.uint8)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    feeds = {"a": a, "b": b, "az": np.array(3, np.uint8), "bz": RNG.integers(0, 255, (5,)).astype(np.uint8)}
    got, want = _run_both(node, feeds, 10, TensorProto.INT32)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32
