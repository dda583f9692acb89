"""The GPU device on a real GPU: torch tensors in and out without host copies, CUDA graphs, f16 by default."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vinerun as ov
import vinerun.opset13 as ops
from vinerun.plugins.gpu.precision import F16_TOLERANCE


def _model() -> ov.Model:
    rng = np.random.default_rng(0)
    x = ops.parameter([2, 16, 12, 12], np.float32, name="x")
    w = ops.constant(rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.1)
    y = ops.relu(ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1]))
    y = ops.sigmoid(ops.multiply(ops.add(y, x), ops.constant(np.float32(0.5))))
    return ov.Model([y], [x], "gpu_device")


@pytest.fixture(scope="module")
def core() -> ov.Core:
    return ov.Core()


def test_gpu_is_listed(core: ov.Core) -> None:
    assert "GPU" in core.available_devices
    assert core.get_property("GPU", "DEVICE_TYPE") is not None
    assert core.get_property("GPU", "GPU_EXECUTION_UNITS_COUNT") > 1


def test_torch_cuda_tensor_in_and_out_without_host_copies(core: ov.Core) -> None:
    compiled = core.compile_model(_model(), "GPU", {"INFERENCE_PRECISION_HINT": "f32"})
    x = torch.randn(2, 16, 12, 12, device="cuda")
    request = compiled.create_infer_request()
    request.infer({"x": x})
    out = request.get_output_tensor(0)
    y = torch.from_dlpack(out)
    assert y.is_cuda and y.data_ptr() == out.torch.data_ptr()
    host = compiled(x.cpu().numpy())[0]
    np.testing.assert_allclose(y.cpu().numpy(), host, rtol=1e-5, atol=1e-5)
    cpu = core.compile_model(_model(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(x.cpu().numpy())[0]
    np.testing.assert_allclose(host, cpu, rtol=1e-4, atol=1e-5)


def test_remote_context_tensors(core: ov.Core) -> None:
    compiled = core.compile_model(_model(), "GPU", {"INFERENCE_PRECISION_HINT": "f32"})
    ctx = compiled.get_context()
    assert ctx.get_params()["CONTEXT_TYPE"] == "CUDA"
    remote = ctx.create_tensor(ov.Type.f32, [2, 16, 12, 12], {})
    remote.copy_from(np.ones((2, 16, 12, 12), np.float32))
    request = compiled.create_infer_request()
    request.infer({"x": remote})
    pinned = ctx.create_host_tensor(ov.Type.f32, [2, 16, 12, 12])
    pinned.data[:] = 1
    np.testing.assert_allclose(torch.from_dlpack(request.get_output_tensor(0)).cpu().numpy(),
                               compiled(pinned.data)[0], rtol=1e-6)


def test_f16_default_within_tolerance_and_replayed_as_a_graph(core: ov.Core) -> None:
    compiled = core.compile_model(_model(), "GPU")
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == ov.Type.f16
    x = np.random.default_rng(2).standard_normal((2, 16, 12, 12)).astype(np.float32)
    ref = core.compile_model(_model(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(x)[0]
    request = compiled.create_infer_request()
    for _ in range(3):
        out = request.infer({"x": x})[0]
    assert np.abs(out - ref).max() <= F16_TOLERANCE * np.abs(ref).max()
    impl = request._impl
    assert impl._graphs and not next(iter(impl._graphs.values())).failed  # captured and replayed


def test_profiling_has_device_times_and_triton_chains(core: ov.Core) -> None:
    compiled = core.compile_model(_model(), "GPU", {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    request.infer({"x": np.ones((2, 16, 12, 12), np.float32)})
    executed = [p for p in request.get_profiling_info() if p.status == p.Status.EXECUTED]
    assert any("cudnn_conv" in p.exec_type for p in executed)
    assert any("triton_fused" in p.exec_type for p in executed), [p.exec_type for p in executed]
    assert all(p.real_time.total_seconds() >= 0 for p in executed)


def test_async_queue_on_streams(core: ov.Core) -> None:
    compiled = core.compile_model(_model(), "GPU", {"PERFORMANCE_HINT": "THROUGHPUT", "ALLOW_AUTO_BATCHING": False})
    assert compiled.get_property("NUM_STREAMS") == 2
    queue = ov.AsyncInferQueue(compiled, compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    results: dict[int, np.ndarray] = {}
    queue.set_callback(lambda request, i: results.__setitem__(i, request.get_output_tensor(0).data.copy()))
    x = np.random.default_rng(3).standard_normal((2, 16, 12, 12)).astype(np.float32)
    for i in range(16):
        queue.start_async({"x": x}, i)
    queue.wait_all()
    assert len(results) == 16 and all(np.array_equal(results[0], r) for r in results.values())


def _conv_chain(post: str) -> ov.Model:
    """A biased 3x3 convolution (as BatchNorm folds into one) and the post-ops ``post`` names."""
    rng = np.random.default_rng(4)
    x = ops.parameter([2, 16, 10, 10], np.float32, name="x")
    w = ops.constant(rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.1)
    y = ops.add(ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1]),
                ops.constant(rng.standard_normal((1, 16, 1, 1)).astype(np.float32)))
    for step in post.split("_"):
        y = {"relu": ops.relu, "sum": lambda v: ops.add(v, x), "clamp": lambda v: ops.clamp(v, 0.0, 6.0),
             "hswish": ops.hswish, "bias": lambda v: v}[step](y)
    return ov.Model([y], [x], f"conv_{post}")


@pytest.mark.parametrize(("post", "exec_type"), [
    ("relu", "cudnn_conv_fused"), ("sum_relu", "cudnn_conv_fused"), ("bias", "cudnn_conv+triton_fused"),
    ("clamp", "cudnn_conv+triton_fused"), ("sum", "cudnn_conv+triton_fused"),
    ("relu_sum_hswish", "cudnn_conv+triton_fused")])
def test_convolution_post_ops_in_one_kernel(core: ov.Core, post: str, exec_type: str) -> None:
    x = np.random.default_rng(5).standard_normal((2, 16, 10, 10)).astype(np.float32)
    ref = core.compile_model(_conv_chain(post), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(x)[0]
    for precision, tolerance in (("f32", 1e-4), ("f16", F16_TOLERANCE)):
        compiled = core.compile_model(_conv_chain(post), "GPU", {"INFERENCE_PRECISION_HINT": precision,
                                                                 "PERF_COUNT": True})
        request = compiled.create_infer_request()
        out = request.infer({"x": x})[0]
        assert np.abs(out - ref).max() <= tolerance * np.abs(ref).max(), (post, precision)
        executed = [p.exec_type for p in request.get_profiling_info() if p.status == p.Status.EXECUTED]
        assert exec_type in executed, executed
        graphs = core.compile_model(_conv_chain(post), "GPU", {"INFERENCE_PRECISION_HINT": precision})
        request = graphs.create_infer_request()
        for _ in range(2):  # the second call replays the captured CUDA graph
            np.testing.assert_allclose(request.infer({"x": x})[0], out, rtol=0, atol=tolerance * np.abs(ref).max())


def _encoder_block() -> ov.Model:
    """Three projections of one tensor (query, key, value), a residual add and a LayerNorm."""
    rng = np.random.default_rng(6)
    x = ops.parameter([2, 24, 64], np.float32, name="x")

    def weight(*shape: int) -> ov.Output:
        return ops.constant(rng.standard_normal(shape).astype(np.float32) * 0.1)

    q, k, v = (ops.add(ops.matmul(x, weight(64, 64)), weight(64)) for _ in range(3))
    h = ops.add(ops.add(ops.multiply(q, k), v), x)
    norm = ops.add(ops.multiply(ops.mvn(h, ops.constant(np.array([-1], np.int64)), True, 1e-5), weight(64)),
                   weight(64))
    return ov.Model([norm], [x], "encoder_block")


def test_parallel_projections_and_residual_layer_norm(core: ov.Core) -> None:
    x = np.random.default_rng(7).standard_normal((2, 24, 64)).astype(np.float32)
    ref = core.compile_model(_encoder_block(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(x)[0]
    for precision, tolerance in (("f32", 1e-4), ("f16", F16_TOLERANCE)):
        compiled = core.compile_model(_encoder_block(), "GPU", {"INFERENCE_PRECISION_HINT": precision,
                                                                "PERF_COUNT": True})
        request = compiled.create_infer_request()
        out = request.infer({"x": x})[0]
        assert np.abs(out - ref).max() <= tolerance * np.abs(ref).max(), precision
        executed = [(p.node_type, p.exec_type) for p in request.get_profiling_info() if p.status == p.Status.EXECUTED]
        assert ("ResidualLayerNorm", "triton_layer_norm") in executed, executed
        assert sum(t == "FusedMatMul" for t, _ in executed) == 1, executed


def test_attention_rows_hiding_every_key_are_zeros_on_device() -> None:
    """The NaN guard's Triton kernel (writes only the flagged rows) against the reference, f16 and f32."""
    from vinerun.ir.core_ops import Parameter
    from vinerun.ir.types import Type
    from vinerun.plugins.gpu.kernels import select_kernel
    from vinerun.transformations.fused_transformer import FusedAttention

    rng = np.random.default_rng(8)
    q, k, v = (Parameter(Type.f32, [2, 4, n, 16], name=name) for name, n in (("q", 6), ("k", 9), ("v", 9)))
    mask = Parameter(Type.f32, [2, 1, 6, 9], name="mask")
    node = FusedAttention(q, k, v, mask, scale=0.25, zero_masked_rows=True)
    values = [rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 6, 16), (2, 4, 9, 16), (2, 4, 9, 16))]
    hidden = rng.standard_normal((2, 1, 6, 9)).astype(np.float32)
    hidden[:, :, 2] = -np.inf
    want = node.evaluate([*values, hidden])[0]
    kernel = select_kernel(node, torch.device("cuda"))
    for dtype, tolerance in ((torch.float32, 1e-5), (torch.float16, 2e-3)):
        got = kernel.fn([torch.from_numpy(x).to("cuda", dtype) for x in (*values, hidden)])[0].float().cpu().numpy()
        assert np.all(got[:, :, 2] == 0) and np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
