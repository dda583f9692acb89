"""The GPU's generated Triton kernels run through a NumPy shim of Triton (``_triton_shim``) on the CPU: the
convolution epilogue (per-channel bias in either layout, residual, activations), element-wise chains and the
residual LayerNorm, against the graphs they replace. The kernels' choice is made for a CUDA device; their
tensors stay on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.unit.plugins_gpu import _triton_shim
from tests.unit.plugins_gpu.test_gpu_fusions import _conv, _fused_conv_model, const, rand
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.ops.activations import HSwish, Relu, Sigmoid
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.convolution import Convolution
from vinerun.ops.matmul import MatMul
from vinerun.plugins.gpu import triton_layer_norm, triton_rows
from vinerun.plugins.gpu.eltwise_chain import EltwiseChainFusion
from vinerun.plugins.gpu.fused_ops import gpu_fusions
from vinerun.plugins.gpu.kernels import select_kernel
from vinerun.transformations.fused_transformer import FusedAttention, FusedLayerNorm

CUDA = torch.device("cuda")


@pytest.fixture
def shim(monkeypatch: pytest.MonkeyPatch):
    _triton_shim.install(monkeypatch)
    for module in (triton_layer_norm, triton_rows):
        module._kernel.cache_clear()
    yield
    for module in (triton_layer_norm, triton_rows):
        module._kernel.cache_clear()


def _run(node: Node, x: np.ndarray, exec_type: str,
         layout: torch.memory_format = torch.contiguous_format) -> np.ndarray:
    kernel = select_kernel(node, CUDA)
    assert kernel.exec_type == exec_type
    inputs = [torch.from_numpy(x).contiguous(memory_format=layout) if v.node.type_name == "Parameter"
              else torch.from_numpy(np.asarray(v.node.get_value())) for v in node.input_values()]
    return kernel.fn(inputs)[0].contiguous().numpy()


@pytest.mark.parametrize("post", ["bias", "clamp", "sum", "relu_sum_hswish"])
def test_convolution_epilogue(shim, post: str) -> None:
    if post == "relu_sum_hswish":
        x = Parameter(Type.f32, [2, 4, 6, 6], name="x")
        y = HSwish(Add(Relu(Add(_conv(x.output(0), 4, 4), const(rand(1, 4, 1, 1)))), x))
        model = Model([Result(y)], [x])
        assert gpu_fusions(model)
        fused = model.get_results()[0].input_value(0)
    else:
        model, fused = _fused_conv_model(post)
    data = rand(2, 4, 6, 6)
    got = _run(fused.node, data, "cudnn_conv+triton_fused", torch.channels_last)
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-5, atol=1e-5)


def test_convolution_epilogue_row_major(shim) -> None:
    """A 1-D convolution's output is row-major: the bias of flat index i is at (i // length) % channels."""
    x = Parameter(Type.f32, [2, 3, 9], name="x")
    conv = Convolution(x, const(rand(5, 3, 3)), strides=[1], pads_begin=[1], pads_end=[1], dilations=[1])
    model = Model([Result(HSwish(Add(conv, const(rand(1, 5, 1)))))], [x])
    assert gpu_fusions(model)
    data = rand(2, 3, 9)
    got = _run(model.get_results()[0].input_value(0).node, data, "cudnn_conv+triton_fused")
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-5, atol=1e-5)


def test_residual_layer_norm_kernel(shim) -> None:
    x = Parameter(Type.f32, [2, 3, 40], name="x")
    h = Add(MatMul(x, const(rand(40, 40))), const(rand(40)))
    model = Model([Result(FusedLayerNorm(Add(h, x), const(rand(40) + 1), const(rand(40)), eps=1e-6))], [x])
    assert gpu_fusions(model)
    norm = model.get_results()[0].input_value(0).node
    data = rand(2, 3, 40)
    kernel = select_kernel(norm, CUDA)
    assert kernel.exec_type == "triton_layer_norm"
    h_value = run_reference(Model([Result(norm.input_value(0).node)], [x]), [data])[0]
    inputs = [torch.from_numpy(h_value), torch.from_numpy(data)] + [
        torch.from_numpy(np.asarray(v.node.get_value())) for v in norm.input_values()[2:]]
    np.testing.assert_allclose(kernel.fn(inputs)[0].numpy(), run_reference(model, [data])[0], rtol=1e-5, atol=1e-5)


def test_element_wise_chain_kernel(shim) -> None:
    x = Parameter(Type.f32, [3, 50], name="x")
    model = Model([Result(Sigmoid(Multiply(Relu(x), const(0.5))))], [x])
    assert EltwiseChainFusion(lambda node: True)(model).modified
    data = rand(3, 50)
    got = _run(model.get_results()[0].input_value(0).node, data, "triton_fused")
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mask_shape", [(2, 1, 5, 7), (1, 1, 5, 7), (2, 3, 5, 7)])
def test_attention_rows_whose_mask_hides_every_key_are_zeros(shim, mask_shape: tuple[int, ...]) -> None:
    """The NaN guard's zeroing kernel (writes only flagged rows; flags broadcast over batch / heads)."""
    q, k, v = (Parameter(Type.f32, [2, 3, n, 8], name=name) for name, n in (("q", 5), ("k", 7), ("v", 7)))
    mask = Parameter(Type.f32, list(mask_shape), name="mask")
    node = FusedAttention(q, k, v, mask, scale=0.35, zero_masked_rows=True)
    values = [rand(2, 3, 5, 8), rand(2, 3, 7, 8), rand(2, 3, 7, 8), rand(*mask_shape)]
    values[3][..., 1, :] = -np.inf  # every query row 1 hides all keys
    values[3][0, 0, 3, :] = -np.inf
    kernel = select_kernel(node, CUDA)
    got = kernel.fn([torch.from_numpy(x) for x in values])[0].numpy()
    want = node.evaluate(values)[0]
    assert np.all(got[:, :, 1] == 0) and np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_failing_fast_kernel_falls_back_for_good(caplog) -> None:
    from vinerun.plugins.gpu.kernels._nn import Fallback

    calls: list[str] = []

    def fast(x: int) -> int:
        calls.append("fast")
        raise RuntimeError("no engine for this configuration")

    def slow(x: int) -> int:
        calls.append("slow")
        return x + 1

    run = Fallback("test kernel", fast, slow)
    assert run(1) == 2 and run(2) == 3
    assert calls == ["fast", "slow", "slow"] and run.failed
    assert "test kernel failed" in caplog.text
