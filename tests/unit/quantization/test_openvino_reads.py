"""openvino reads the IR vinerun.quantize / compress_weights write, and runs the quantized layers in int8."""

import numpy as np
import pytest

import vinerun as ov

openvino = pytest.importorskip("openvino")
RNG = np.random.default_rng(3)


def _model() -> ov.Model:
    x = ov.opset1.parameter([1, 8, 16, 16], ov.Type.f32, name="x")
    c = ov.opset1.convolution(x, RNG.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2, [1, 1], [1, 1],
                              [1, 1], [1, 1], name="conv1")
    r = ov.opset1.relu(ov.opset1.add(c, np.full((1, 16, 1, 1), 0.1, np.float32)), name="relu1")
    c2 = ov.opset1.convolution(r, RNG.standard_normal((16, 16, 1, 1)).astype(np.float32) * 0.2, [1, 1], [0, 0],
                               [0, 0], [1, 1], name="conv2")
    return ov.Model([ov.opset1.relu(c2, name="out")], [x], "two_convs")


def test_openvino_runs_quantized_ir_in_int8(tmp_path):
    model = _model()
    data = [RNG.standard_normal((1, 8, 16, 16)).astype(np.float32) for _ in range(8)]
    ov.save_model(ov.quantize(model, data), tmp_path / "q.xml", compress_to_fp16=False)
    core = openvino.Core()
    compiled = core.compile_model(str(tmp_path / "q.xml"), "CPU", {"PERF_COUNT": True})
    req = compiled.create_infer_request()
    req.infer({0: data[0]})
    convs = [p for p in req.profiling_info if p.node_type == "Convolution"]
    assert convs and all(any(t in p.exec_type.lower() for t in ("i8", "u8", "int8")) for p in convs), \
        [(p.node_name, p.exec_type) for p in convs]
    ref = ov.Core().compile_model(model, "CPU")(data[0])[0]
    got = req.get_output_tensor(0).data
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()


@pytest.mark.parametrize("mode", ["int8_asym", "int4_sym"])
def test_openvino_runs_compressed_weights(tmp_path, mode):
    x = ov.opset1.parameter([2, 64], ov.Type.f32, name="x")
    w = RNG.standard_normal((64, 32)).astype(np.float32) * 0.1
    h = ov.opset1.matmul(x, w, False, False, name="fc1")
    model = ov.Model([ov.opset1.matmul(h, w.T.copy(), False, False, name="fc2")], [x])
    ov.save_model(ov.compress_weights(model, mode=mode, group_size=None if mode == "int8_asym" else 16,
                                      all_layers=True), tmp_path / "c.xml", compress_to_fp16=False)
    a = RNG.standard_normal((2, 64)).astype(np.float32)
    got = openvino.Core().compile_model(str(tmp_path / "c.xml"), "CPU")({0: a})[0]
    ref = ov.Core().compile_model(model, "CPU")(a)[0]
    assert np.abs(got - ref).max() < 0.15 * np.abs(ref).max()
