"""IR interoperability with openvino (the oracle): each side reads what the other writes and the outputs agree.

(a) openvino reads the ONNX version of each reference network and saves IR (f32 and f16-compressed);
    vinerun reads and runs it and matches openvino's f32 outputs.
(b) vinerun builds and saves each network; openvino reads, compiles and runs it with matching outputs.
Plus stateful (ReadValue/Assign) and Loop/If models built with openvino's own opset API.
"""

from pathlib import Path

import numpy as np
import pytest

import vinerun as vr
from vinerun import models

openvino = pytest.importorskip("openvino")
OV_F32 = {"INFERENCE_PRECISION_HINT": "f32"}
NETWORKS = sorted(models.MODELS)


def _ov_run(path_or_model, inputs, requests: int = 1) -> list[list[np.ndarray]]:
    core = openvino.Core()
    model = core.read_model(path_or_model) if isinstance(path_or_model, (str, Path)) else path_or_model
    req = core.compile_model(model, "CPU", OV_F32).create_infer_request()
    return [[np.array(v) for v in req.infer(inputs).to_tuple()] for _ in range(requests)]


def _vr_run(path_or_model, inputs, requests: int = 1) -> list[list[np.ndarray]]:
    model = vr.Core().read_model(path_or_model) if isinstance(path_or_model, (str, Path)) else path_or_model
    req = vr.compile_model(model, "CPU", OV_F32).create_infer_request()
    return [[np.array(v) for v in req.infer(inputs).to_tuple()] for _ in range(requests)]


def _close(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-4, atol: float = 1e-4) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("compress", [False, True], ids=["f32", "f16"])
@pytest.mark.parametrize("name", NETWORKS)
def test_vinerun_reads_ir_saved_by_openvino(tmp_path, name, compress):
    inputs = models.sample_inputs(name)
    ov_model = openvino.Core().read_model(models.build_onnx(name).SerializeToString())
    want = _ov_run(ov_model, inputs)[0]
    path = tmp_path / f"{name}.xml"
    openvino.save_model(ov_model, str(path), compress_to_fp16=compress)
    got = _vr_run(path, inputs)[0]
    if compress:  # f16 weights: same file in openvino tightly, the f32 original loosely
        _close(got, _ov_run(path, inputs)[0])
        scale = max(float(np.abs(w).max()) for w in want)
        _close(got, want, rtol=1e-2, atol=1e-2 * scale)
    else:
        _close(got, want)
    read = vr.Core().read_model(path)
    assert [o.get_names() for o in read.outputs] == [set(o.get_names()) for o in ov_model.outputs]


@pytest.mark.parametrize("compress", [False, True], ids=["f32", "f16"])
@pytest.mark.parametrize("name", NETWORKS)
def test_openvino_reads_ir_saved_by_vinerun(tmp_path, name, compress):
    inputs = models.sample_inputs(name)
    model = models.build(name)
    path = tmp_path / f"{name}.xml"
    vr.save_model(model, path, compress_to_fp16=compress)
    want = _vr_run(path if compress else model, inputs)[0]
    _close(_ov_run(path, inputs)[0], want)
    ov_model = openvino.Core().read_model(str(path))
    assert [set(o.get_names()) for o in ov_model.outputs] == [o.get_names() for o in model.outputs]
    if compress:
        kinds = {n.get_type_name() for n in ov_model.get_ordered_ops()}
        assert "Convert" in kinds
        decompress = [n for n in ov_model.get_ordered_ops() if n.get_type_name() == "Convert"]
        assert all("decompression" in "".join(n.get_rt_info().keys()) for n in decompress)


def _ov_stateful_model():
    from openvino import opset13 as ops
    from openvino.op.util import Variable, VariableInfo

    info = VariableInfo()
    info.data_shape, info.data_type, info.variable_id = openvino.PartialShape([1, 3]), openvino.Type.f32, "acc"
    var = Variable(info)
    x = ops.parameter([1, 3], np.float32, name="x")
    rv = ops.read_value(ops.constant(np.zeros((1, 3), np.float32)), var)
    total = ops.add(rv, ops.multiply(x, ops.constant(np.float32(2))))
    total.output(0).get_tensor().set_names({"total"})
    m = openvino.Model([total], [x], "stateful")
    m.add_sinks([ops.assign(total, var)])
    return m


def test_stateful_model_both_ways(tmp_path):
    inputs = {"x": np.array([[1, 2, 3]], np.float32)}
    openvino.save_model(_ov_stateful_model(), str(tmp_path / "ov.xml"), compress_to_fp16=False)
    want = _ov_run(tmp_path / "ov.xml", inputs, requests=3)
    assert [w[0][0, 0] for w in want] == [2.0, 4.0, 6.0]
    got = _vr_run(tmp_path / "ov.xml", inputs, requests=3)
    for g, w in zip(got, want, strict=True):
        _close(g, w)
    vr.save_model(vr.Core().read_model(tmp_path / "ov.xml"), tmp_path / "vr.xml", compress_to_fp16=False)
    for g, w in zip(_ov_run(tmp_path / "vr.xml", inputs, requests=3), want, strict=True):
        _close(g, w)


def _ov_control_flow_model():
    from openvino import opset13 as ops

    x = ops.parameter([2, 3], np.float32, name="x")
    cond = ops.parameter([], np.bool_, name="cond")
    tx = ops.parameter([2, 3], np.float32)
    ex = ops.parameter([2, 3], np.float32)
    if_op = ops.if_op(cond)
    if_op.set_then_body(openvino.Model([ops.relu(tx)], [tx], "then"))
    if_op.set_else_body(openvino.Model([ops.negative(ex)], [ex], "else"))
    if_op.set_input(x.output(0), tx, ex)
    chosen = if_op.set_output(if_op.get_then_body().get_results()[0], if_op.get_else_body().get_results()[0])
    bi = ops.parameter([], np.int64)
    bx = ops.parameter([2, 3], np.float32)
    step = ops.add(bx, ops.convert(bi, "f32"))
    body = openvino.Model([step, ops.constant(np.array(True)), ops.unsqueeze(step, [0])], [bi, bx], "body")
    loop = ops.loop(ops.constant(np.array(3, np.int64)), ops.constant(np.array(True)))
    loop.set_function(body)
    loop.set_special_body_ports([0, 1])
    loop.set_merged_input(bx, chosen, step.output(0))
    last = loop.get_iter_value(step.output(0), -1)
    every = loop.get_concatenated_slices(body.get_results()[2].output(0), 0, 1, 1, -1, 0)
    return openvino.Model([last, every], [x, cond], "control")


@pytest.mark.parametrize("flag", [True, False])
def test_if_and_loop_both_ways(tmp_path, flag):
    inputs = {"x": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), "cond": np.array(flag)}
    openvino.save_model(_ov_control_flow_model(), str(tmp_path / "ov.xml"), compress_to_fp16=False)
    want = _ov_run(tmp_path / "ov.xml", inputs)[0]
    _close(_vr_run(tmp_path / "ov.xml", inputs)[0], want)
    vr.save_model(vr.Core().read_model(tmp_path / "ov.xml"), tmp_path / "vr.xml", compress_to_fp16=False)
    _close(_ov_run(tmp_path / "vr.xml", inputs)[0], want)


@pytest.mark.parametrize("kind", ["GlobalMaxPool", "GlobalAveragePool"])
def test_global_pool_from_onnx_saves_full_window_attributes(tmp_path, kind):
    """ONNX global pooling becomes a pool over the whole spatial extent; openvino needs its strides and pads."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node(kind, ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1])])
    path = tmp_path / "pool.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    inputs = {"x": np.random.default_rng(0).standard_normal((1, 4, 12)).astype(np.float32)}
    vr.save_model(vr.Core().read_model(path), tmp_path / "pool.xml", compress_to_fp16=False)
    _close(_ov_run(tmp_path / "pool.xml", inputs)[0], _ov_run(path, inputs)[0])


@pytest.mark.parametrize("op", ["max_pool", "avg_pool", "convolution"])
def test_empty_window_attributes_are_spelled_out(tmp_path, op):
    """A pool or convolution built with empty strides / pads (vinerun: defaults) is written with one value per axis."""
    x = vr.opset8.parameter([1, 2, 6, 6], vr.Type.f32, name="x")
    if op == "max_pool":
        node = vr.opset8.max_pool(x, kernel_shape=[3, 3])
    elif op == "avg_pool":
        node = vr.opset1.avg_pool(x, kernel_shape=[3, 3], exclude_pad=True)
    else:
        node = vr.opset1.convolution(x, np.ones((3, 2, 3, 3), np.float32))
    model = vr.Model([node.output(0)], [x])
    vr.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    inputs = {"x": np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)}
    _close(_ov_run(tmp_path / "m.xml", inputs)[0], _vr_run(model, inputs)[0])


def test_magika_ir_saved_by_vinerun_runs_in_openvino(tmp_path):
    """The magika classifier (ONNX with GlobalMaxPool): vinerun's IR of it reads in openvino and agrees."""
    magika = pytest.importorskip("magika")
    onnx_path = Path(magika.__file__).parent / "models" / "standard_v3_3" / "model.onnx"
    if not onnx_path.exists():
        pytest.skip("magika's standard_v3_3 model is not installed")
    vr.save_model(vr.Core().read_model(onnx_path), tmp_path / "magika.xml", compress_to_fp16=False)
    rng = np.random.default_rng(0)
    data = np.concatenate([rng.integers(0, 256, (1, 1500)), np.full((1, 548), 256)], axis=1).astype(np.int32)
    inputs = {openvino.Core().read_model(str(onnx_path)).inputs[0].get_any_name(): data}
    _close(_ov_run(tmp_path / "magika.xml", inputs)[0], _ov_run(onnx_path, inputs)[0], rtol=1e-4, atol=1e-5)
