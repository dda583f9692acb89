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
from vinerun.plugins.gpu import triton_layer_norm
from vinerun.plugins.gpu.eltwise_chain import EltwiseChainFusion
from vinerun.plugins.gpu.fused_ops import gpu_fusions
from vinerun.plugins.gpu.kernels import select_kernel
from vinerun.transformations.fused_transformer import FusedLayerNorm

CUDA = torch.device("cuda")


@pytest.fixture
def shim(monkeypatch: pytest.MonkeyPatch):
    _triton_shim.install(monkeypatch)
    triton_layer_norm._kernel.cache_clear()
    yield
    triton_layer_norm._kernel.cache_clear()


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
