"""OpenVINO user code, run unchanged with ``ov = vinerun`` and with ``ov = openvino`` (the oracle).

Each scenario is written once against the module passed in; the same assertions must hold for
both. openvino is compiled in f32 (it defaults to bf16 on AMX CPUs).
"""

from __future__ import annotations

import numpy as np
import pytest

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def _conv_model(ov):
    ops = ov.opset13
    rng = np.random.default_rng(0)
    data = ops.parameter([1, 3, 8, 8], ov.Type.f32, name="data")
    w = ops.constant(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    conv = ops.convolution(data, w, [1, 1], [1, 1], [1, 1], [1, 1])
    out = ops.relu(conv)
    out.output(0).set_names({"out"})
    return ov.Model([out], [data], "conv_relu"), w.get_data()


def _conv_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2], x.shape[3]), np.float64)
    for i in range(3):
        for j in range(3):
            patch = xp[:, :, i:i + x.shape[2], j:j + x.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return np.maximum(out, 0)


def test_async_queue_with_callbacks_and_userdata(ov):
    model, w = _conv_model(ov)
    props = ov.properties
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {props.hint.performance_mode: props.hint.PerformanceMode.THROUGHPUT,
                                                 **F32})
    seen = {}

    def on_done(request, userdata):
        seen[userdata] = request.get_output_tensor(0).data.copy()

    queue = ov.AsyncInferQueue(compiled)
    assert len(queue) == compiled.get_property(props.optimal_number_of_infer_requests)
    queue.set_callback(on_done)
    xs = [np.random.default_rng(i).standard_normal((1, 3, 8, 8)).astype(np.float32) for i in range(6)]
    for i, x in enumerate(xs):
        queue.start_async({"data": x}, userdata=i)
    queue.wait_all()
    assert sorted(seen) == list(range(6))
    for i, x in enumerate(xs):
        np.testing.assert_allclose(seen[i], _conv_reference(x, w), rtol=1e-4, atol=1e-4)


def test_properties_as_keys_pairs_and_typed_values(ov):
    props = ov.properties
    core = ov.Core()
    assert props.cache_dir == "CACHE_DIR" and props.cache_dir("d") == ("CACHE_DIR", "d")
    core.set_property("CPU", {props.hint.performance_mode: props.hint.PerformanceMode.THROUGHPUT})
    assert core.get_property("CPU", props.hint.performance_mode) == props.hint.PerformanceMode.THROUGHPUT
    supported = core.get_property("CPU", props.supported_properties)
    assert "PERFORMANCE_HINT" in supported and "FULL_DEVICE_NAME" in supported
    model, _ = _conv_model(ov)
    compiled = core.compile_model(model, "CPU", dict([props.hint.performance_mode(props.hint.PerformanceMode.LATENCY),
                                                      props.enable_profiling(True)]))
    assert compiled.get_property(props.optimal_number_of_infer_requests) == 1
    assert isinstance(core.get_property("CPU", props.range_for_streams), tuple)
    with pytest.raises(RuntimeError):
        core.set_property("CPU", {"NO_SUCH_PROPERTY": 1})
    with pytest.raises((RuntimeError, TypeError)):
        core.set_property("CPU", {props.hint.performance_mode: "FASTEST"})


def test_export_then_import_gives_the_same_outputs(ov):
    model, w = _conv_model(ov)
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", F32)
    blob = compiled.export_model()
    imported = core.import_model(blob, "CPU", F32)
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(imported({"data": x})["out"], compiled({"data": x})["out"])
    assert imported.output(0).get_names() == compiled.output(0).get_names()


def test_second_compile_is_loaded_from_cache(ov, tmp_path):
    model, _ = _conv_model(ov)
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path))
    core = ov.Core()
    core.set_property({ov.properties.cache_dir: str(tmp_path / "cache")})
    first = core.compile_model(str(path), "CPU", F32)
    second = core.compile_model(str(path), "CPU", F32)
    assert first.get_property(ov.properties.loaded_from_cache) is False
    assert second.get_property(ov.properties.loaded_from_cache) is True


def test_stateful_model_read_set_reset(ov):
    ops = ov.opset13
    from_util = ov.op.util
    x = ops.parameter([1, 2], ov.Type.f32, name="x")
    info = from_util.VariableInfo()
    info.data_shape = ov.PartialShape([1, 2])
    info.data_type = ov.Type.f32
    info.variable_id = "acc"
    var = from_util.Variable(info)
    init = ops.constant(np.zeros((1, 2), np.float32))
    read = ops.read_value(init, var)
    total = ops.add(read, x)
    assign = ops.assign(total, var)
    res = ops.result(total)
    model = ov.Model([res], [assign], [x], "accumulator")
    request = ov.Core().compile_model(model, "CPU", F32).create_infer_request()
    one = np.ones((1, 2), np.float32)
    request.infer({"x": one})
    out = request.infer({"x": one})
    np.testing.assert_array_equal(out[0], [[2, 2]])
    (state,) = request.query_state()
    assert state.name == "acc"
    np.testing.assert_array_equal(state.state.data, [[2, 2]])
    state.state = ov.Tensor(np.full((1, 2), 10, np.float32))
    np.testing.assert_array_equal(request.infer({"x": one})[0], [[11, 11]])
    request.reset_state()
    np.testing.assert_array_equal(request.infer({"x": one})[0], [[1, 1]])


def test_preprocessing_u8_nhwc_input_feeds_an_nchw_model(ov):
    from_pre = ov.preprocess
    model, w = _conv_model(ov)
    ppp = from_pre.PrePostProcessor(model)
    ppp.input().tensor().set_element_type(ov.Type.u8).set_layout(ov.Layout("NHWC"))
    ppp.input().preprocess().convert_element_type(ov.Type.f32).mean(100.0).scale(50.0)
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    model = ppp.build()
    assert model.input(0).get_element_type() == ov.Type.u8
    image = np.random.default_rng(5).integers(0, 256, (1, 8, 8, 3), dtype=np.uint8)
    got = ov.Core().compile_model(model, "CPU", F32)({0: image})[0]
    x = (image.astype(np.float32).transpose(0, 3, 1, 2) - 100.0) / 50.0
    np.testing.assert_allclose(got, _conv_reference(x, w), rtol=1e-4, atol=1e-4)
