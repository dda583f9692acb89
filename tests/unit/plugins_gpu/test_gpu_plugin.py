"""The GPU plugin on the stand-in: devices, properties, plans, precision, profiling, remote tensors, chains."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vinerun as ov
import vinerun.opset13 as ops
from vinerun.errors import DeviceError, InputError
from vinerun.plugins.gpu import backend, triton_codegen
from vinerun.plugins.gpu.eltwise_chain import EltwiseChain, EltwiseChainFusion
from vinerun.plugins.gpu.precision import F16_TOLERANCE

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def conv_chain_model() -> ov.Model:
    """conv -> relu -> + residual -> clamp -> * scalar, then a reshape and a constant subgraph."""
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 4, 8, 8], np.float32, name="x")
    w = ops.constant(rng.standard_normal((4, 4, 3, 3)).astype(np.float32) * 0.3)
    conv = ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
    y = ops.relu(conv)
    y = ops.add(y, x)
    y = ops.clamp(y, -1.0, 2.0)
    scale = ops.multiply(ops.constant(np.float32(2.0)), ops.constant(np.float32(0.25)))  # folded at load time
    y = ops.multiply(y, scale)
    y = ops.sqrt(ops.abs(y))  # past what the convolution fusion takes: an element-wise chain
    y = ops.reshape(y, ops.constant(np.array([1, -1], np.int64)), False)
    return ov.Model([y], [x], "chain")


def test_gpu_is_listed_only_with_a_device(stand_in: backend.GpuDevice) -> None:
    assert "GPU" in ov.Core().available_devices


def test_without_a_gpu_compiling_names_the_devices() -> None:
    if backend.has_gpu():
        pytest.skip("this machine has a GPU")
    core = ov.Core()
    assert "GPU" not in core.available_devices
    with pytest.raises(DeviceError, match="Available devices: CPU"):
        core.compile_model(conv_chain_model(), "GPU")


def test_properties(stand_in: backend.GpuDevice) -> None:
    core = ov.Core()
    assert core.get_property("GPU", "INFERENCE_PRECISION_HINT") == ov.Type.f16
    assert "FP16" in core.get_property("GPU", "OPTIMIZATION_CAPABILITIES")
    assert core.get_property("GPU", "GPU_DEVICE_TOTAL_MEM_SIZE") > 0
    assert len(core.get_property("GPU", "DEVICE_UUID")) == 32
    supported = core.get_property("GPU", "SUPPORTED_PROPERTIES")
    for key in ("NUM_STREAMS", "CACHE_DIR", "MODEL_PRIORITY", "GPU_QUEUE_THROTTLE", "TUNING_MODE", "CONFIG_FILE"):
        assert key in supported
    core.set_property("GPU", {"GPU_THROUGHPUT_STREAMS": 2})  # the legacy name
    assert core.get_property("GPU", "NUM_STREAMS") == 2
    with pytest.raises(Exception, match="GPU_QUEUE_THROTTLE"):
        core.set_property("GPU", {"GPU_QUEUE_THROTTLE": "FAST"})


def test_f32_matches_cpu_and_f16_within_tolerance(stand_in: backend.GpuDevice) -> None:
    core, model = ov.Core(), conv_chain_model()
    x = np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype(np.float32)
    cpu = core.compile_model(model, "CPU", F32)(x)[0]
    gpu = core.compile_model(model, "GPU", F32)(x)[0]
    np.testing.assert_allclose(gpu, cpu, rtol=1e-5, atol=1e-5)
    f16 = core.compile_model(model, "GPU")
    assert f16.get_property("INFERENCE_PRECISION_HINT") == ov.Type.f16
    out = f16(x)[0]
    assert out.dtype == np.float32  # outputs keep their declared type
    assert np.abs(out - cpu).max() <= F16_TOLERANCE * np.abs(cpu).max()


def test_profiling_shows_fusion_views_and_load_time(stand_in: backend.GpuDevice) -> None:
    compiled = ov.Core().compile_model(conv_chain_model(), "GPU", {**F32, "PERF_COUNT": True})
    request = compiled.create_infer_request()
    request.infer({"x": np.ones((1, 4, 8, 8), np.float32)})
    by_type = {}
    for info in request.get_profiling_info():
        by_type.setdefault(info.node_type, []).append((info.exec_type, info.status.name))
    chain = by_type["EltwiseChain"][0]
    assert chain[0].startswith("cudnn_conv+") and chain[0].endswith("_fused") and chain[1] == "EXECUTED"
    for fused in ("FusedConvolution", "Relu", "Add", "Clamp", "Abs"):
        assert ("undef", "OPTIMIZED_OUT") in by_type[fused], fused
    assert by_type["Reshape"][0][1] == "OPTIMIZED_OUT"
    assert ("load_time", "OPTIMIZED_OUT") in by_type["Multiply"]  # the constant scale, computed at compile


def test_remote_tensors_in_and_out_without_copies(stand_in: backend.GpuDevice) -> None:
    core = ov.Core()
    compiled = core.compile_model(conv_chain_model(), "GPU", F32)
    ctx = compiled.get_context()
    assert core.get_default_context("GPU").get_device_name() == ctx.get_device_name()
    remote = ctx.create_tensor(ov.Type.f32, [1, 4, 8, 8], {})
    remote.copy_from(np.ones((1, 4, 8, 8), np.float32))
    request = compiled.create_infer_request()
    request.infer({"x": remote})
    out = request.get_output_tensor(0)
    assert isinstance(out, ov.RemoteTensor)
    assert torch.from_dlpack(out).data_ptr() == out.torch.data_ptr()  # the request's device memory itself
    host = ov.Tensor(ov.Type.f32, [1, 256])
    out.copy_to(host)
    np.testing.assert_allclose(host.data, compiled(np.ones((1, 4, 8, 8), np.float32))[0], rtol=1e-6)
    with pytest.raises(InputError, match="device memory"):
        core.compile_model(conv_chain_model(), "CPU").create_infer_request().infer({"x": remote})
    with pytest.raises(InputError, match="element type"):
        request.infer({"x": ctx.create_tensor(ov.Type.f16, [1, 4, 8, 8], {})})


def test_chain_fusion_takes_scalars_and_residuals_only() -> None:
    x = ops.parameter([2, 3], np.float32)
    bias = ops.constant(np.ones(3, np.float32))  # broadcast: not a chain operand
    y = ops.sigmoid(ops.multiply(ops.relu(ops.add(x, bias)), ops.constant(np.float32(3))))
    model = ov.Model([y], [x])
    EltwiseChainFusion(lambda node: True)(model)
    chains = [n for n in model.get_ordered_ops() if isinstance(n, EltwiseChain)]
    assert [c.ops for c in chains] == ["Relu,Multiply,Sigmoid"]


def test_triton_source_is_generated_for_every_covered_step() -> None:
    x = ops.parameter([4], np.float32)
    nodes = [ops.relu(x), ops.gelu(x, "tanh"), ops.clamp(x, 0.0, 1.0), ops.hswish(x)]
    source = triton_codegen.generate([(n, 0, False) for n in nodes] + [(ops.subtract(x, x), 1, True)], ["scalar"])
    assert source is not None and "o - x" in source and "tl.load(O0)" in source
    compile(source, "chain.py", "exec")  # valid Python (Triton itself compiles it on the GPU machine)
    assert triton_codegen.generate([(ops.floor(x), 0, False)], []) is None


def test_triton_source_of_a_clamp_with_an_infinite_bound() -> None:
    """A Maximum read as ``Clamp(x, lo, +inf)`` (MinMaxToClamp): the missing bound is no code, not ``inf``."""
    x = ops.parameter([4], np.float32)
    source = triton_codegen.generate([(ops.clamp(x, -1.5, float("inf")), 0, False),
                                      (ops.clamp(x, float("-inf"), 6.0), 0, False)], [])
    assert source is not None and "inf" not in source
    assert "tl.maximum(x, -1.5)" in source and "tl.minimum(x, 6.0)" in source
    compile(source, "chain.py", "exec")


def test_batch_size_properties(stand_in: backend.GpuDevice) -> None:
    core = ov.Core()
    model = conv_chain_model()
    optimal = core.get_property("GPU", "OPTIMAL_BATCH_SIZE", {"MODEL_PTR": model})
    maximum = core.get_property("GPU", "MAX_BATCH_SIZE", {"MODEL_PTR": model})
    assert 1 <= optimal <= maximum <= 256 and optimal & (optimal - 1) == 0


def test_config_file_custom_layer(stand_in: backend.GpuDevice, tmp_path) -> None:  # noqa: ANN001
    (tmp_path / "my_kernels.py").write_text(
        "def leaky(inputs, attributes):\n"
        "    x = inputs[0]\n"
        "    return [x.clamp(min=0) + 0.5 * x.clamp(max=0)]\n")
    config = tmp_path / "layers.xml"
    config.write_text('<CustomLayers><CustomLayer name="Relu" type="SimpleGPU" version="1">'
                      '<Kernel entry="leaky"><Source filename="my_kernels.py"/></Kernel></CustomLayer></CustomLayers>')
    x = ops.parameter([4], np.float32, name="x")
    model = ov.Model([ops.relu(x)], [x])
    compiled = ov.Core().compile_model(model, "GPU", {**F32, "CONFIG_FILE": str(config), "PERF_COUNT": True})
    request = compiled.create_infer_request()
    out = request.infer({"x": np.array([-2, -1, 1, 2], np.float32)})[0]
    np.testing.assert_array_equal(out, [-1, -0.5, 1, 2])  # the user's kernel ran, not Relu's
    assert [p.exec_type for p in request.get_profiling_info() if p.node_type == "Relu"] == ["custom"]
    config.write_text('<CustomLayer name="Relu"><Kernel entry="missing"><Source filename="my_kernels.py"/>'
                      '</Kernel></CustomLayer>')
    with pytest.raises(Exception, match="has no function 'missing'"):
        ov.Core().compile_model(model, "GPU", {"CONFIG_FILE": str(config)})


def test_tuning_file_is_written_once_and_reused(tmp_path) -> None:  # noqa: ANN001
    from vinerun.plugins.gpu.config import TuningMode
    from vinerun.plugins.gpu.tuning import TuningStore

    path = str(tmp_path / "tuning.json")
    candidates = [{"BLOCK": 1024}, {"BLOCK": 512}, {"BLOCK": 2048}]
    timed: list[int] = []

    def time_of(params: dict) -> float:
        timed.append(params["BLOCK"])
        return {1024: 2.0, 512: 1.0, 2048: 3.0}[params["BLOCK"]]

    create = TuningStore(TuningMode.TUNING_CREATE, path)
    assert create.choose("k", candidates, time_of) == {"BLOCK": 512} and len(timed) == 3
    assert create.choose("k", candidates, time_of) == {"BLOCK": 512} and len(timed) == 3  # known: not timed again
    reuse = TuningStore(TuningMode.TUNING_USE_EXISTING, path)
    assert reuse.choose("k", candidates, time_of) == {"BLOCK": 512}
    assert reuse.choose("other", candidates, time_of) == {"BLOCK": 1024} and len(timed) == 3  # no tuning
    TuningStore(TuningMode.TUNING_RETUNE, path).choose("k", candidates, time_of)
    assert len(timed) == 6


def test_tensor_iterator_is_unrolled_onto_device_kernels(stand_in: backend.GpuDevice) -> None:
    from tests.unit.test_unroll_iterators import _rnn_iterator

    model = _rnn_iterator(1)
    feeds = [np.full((4, 1, 3), 0.3, np.float32), np.ones((1, 3), np.float32)]
    core = ov.Core()
    expected = core.compile_model(model, "CPU", F32)(feeds)
    for unroll, host in ((True, False), (False, True)):
        compiled = core.compile_model(model, "GPU", {**F32, "PERF_COUNT": True, "GPU_ENABLE_LOOP_UNROLLING": unroll})
        request = compiled.create_infer_request()
        got = request.infer(feeds)
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-6)
        assert any(p.exec_type == "host_ref" for p in request.get_profiling_info()) == host


def test_graph_runner_leaves_sequences_to_the_plan() -> None:
    from vinerun.plugins.gpu.plan import GraphRunner

    runner = GraphRunner.__new__(GraphRunner)  # the check comes before any CUDA work
    assert runner.run([[np.zeros(2, np.float32)]]) is None and runner.run([None]) is None


def test_profiling_of_merged_convolutions_fused_matmul_and_a_host_layer(stand_in: backend.GpuDevice) -> None:
    """Split -> 3 equal convolutions -> Concat runs as one grouped convolution; MatMul + ReLU as one GEMM; NMS on
    the host inside the plan (and ``query_model`` claims it, as OpenVINO's GPU plugin does its CPU layers)."""
    from tests.unit.plugins_gpu.test_gpu_fusions import _split_convs
    from vinerun.ir.core_ops import Result

    x, concat = _split_convs(False)
    image_out = Result(concat)
    a = ops.parameter([2, 8], np.float32, name="a")
    dense = ops.relu(ops.matmul(a, ops.constant(np.ones((8, 4), np.float32)), False, False))
    boxes = ops.parameter([1, 3, 4], np.float32, name="boxes")
    scores = ops.parameter([1, 1, 3], np.float32, name="scores")
    nms = ops.non_max_suppression(boxes, scores, ops.constant(np.int64(2)), ops.constant(np.float32(0.5)))
    model = ov.Model([image_out, ops.result(dense), ops.result(nms.output(0))], [x, a, boxes, scores])
    core = ov.Core()
    assert core.query_model(model, "GPU")[nms.friendly_name] == "GPU"
    compiled = core.compile_model(model, "GPU", {**F32, "PERF_COUNT": True})
    request = compiled.create_infer_request()
    box_data = np.array([[[0, 0, 1, 1], [0, 0, 1, 1.01], [2, 2, 3, 3]]], np.float32)
    feeds = [np.ones((1, 6, 5, 5), np.float32), np.ones((2, 8), np.float32), box_data,
             np.array([[[0.9, 0.8, 0.7]]], np.float32)]
    out = request.infer(feeds)
    np.testing.assert_array_equal(out[2], core.compile_model(model, "CPU", F32)(feeds)[2])
    info = {(p.node_type, p.exec_type, p.status.name) for p in request.get_profiling_info()}
    assert ("GroupConvolution", "cudnn_conv", "EXECUTED") in info
    assert any(t == "FusedMatMul" and e.startswith("cublas_gemm") for t, e, _ in info)
    assert ("Relu", "undef", "OPTIMIZED_OUT") in info
    assert ("NonMaxSuppression", "host_ref", "EXECUTED") in info
