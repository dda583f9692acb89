"""The GPU's fusions (:func:`vinerun.plugins.gpu.fused_ops.gpu_fusions`): node types after, the fused nodes'
references and device kernels (on the stand-in) against the unfused graph."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops.activations import Clamp, Gelu, Relu, Swish
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.concat_split import Concat, Split, VariadicSplit
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.matmul import MatMul
from vinerun.plugins.gpu.fused_ops import GpuFusedConvolution, GpuFusedMatMul, GpuResidualLayerNorm, gpu_fusions
from vinerun.plugins.gpu.kernels import select_kernel
from vinerun.plugins.gpu.plan import GpuPlan
from vinerun.transformations.fused_transformer import FusedLayerNorm

RNG = np.random.default_rng(5)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def const(value: np.ndarray | float) -> Output:
    return Constant(np.asarray(value, np.float32)).output(0)


def types(model: Model) -> list[str]:
    return [n.type_name for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


def fuse_and_check(model: Model, inputs: list[np.ndarray], stand_in) -> list[str]:
    """Fuse ``model``; its reference and its GPU plan must give what the unfused graph gave. Returns the op types."""
    want = run_reference(model, inputs)
    assert gpu_fusions(model)
    for got in (run_reference(model, inputs), GpuPlan(model, stand_in).run(inputs)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)
    return types(model)


def _conv(x: Output, c_in: int, c_out: int, **attrs) -> Convolution:
    return Convolution(x, const(rand(c_out, c_in, 3, 3)), strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                       dilations=[1, 1], **attrs)


def test_conv_bias_relu_residual_relu(stand_in):
    x = Parameter(Type.f32, [1, 4, 6, 6], name="x")
    y = Relu(Add(_conv(x.output(0), 4, 4, name="conv"), const(rand(1, 4, 1, 1))))
    out = Relu(Add(y, x), name="out")
    model = Model([Result(out)], [x])
    assert fuse_and_check(model, [rand(1, 4, 6, 6)], stand_in) == ["FusedConvolution"]
    fused = model.get_results()[0].input_value(0).node
    assert isinstance(fused, GpuFusedConvolution) and fused.version == "vinerun_gpu"
    assert fused.post_ops == "bias,relu,sum,relu" and fused.friendly_name == "conv"
    assert [t for _, t in fused.fused_names] == ["Add", "Relu", "Add", "Relu"]
    assert select_kernel(fused, CPU).exec_type == "cudnn_conv"


def test_group_conv_swish_scale_shift(stand_in):
    x = Parameter(Type.f32, [2, 4, 5, 5])
    conv = GroupConvolution(x, const(rand(2, 3, 2, 3, 3)), strides=[2, 2], pads_begin=[0, 1], pads_end=[1, 0],
                            dilations=[1, 1])
    y = Swish(Add(conv, const(rand(6, 1, 1))), const(1.5))
    out = Add(Multiply(y, const(0.5)), const(0.25))
    model = Model([Result(out)], [x])
    assert fuse_and_check(model, [rand(2, 4, 5, 5)], stand_in) == ["FusedConvolution"]
    assert model.get_results()[0].input_value(0).node.post_ops == "bias,swish,scale,shift"


@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_bias_gelu(stand_in, transpose_b):
    x = Parameter(Type.f32, [2, 3, 8])
    w = rand(6, 8) if transpose_b else rand(8, 6)
    out = Gelu(Add(MatMul(x, const(w), transpose_b=transpose_b), const(rand(6))))
    model = Model([Result(out)], [x])
    assert fuse_and_check(model, [rand(2, 3, 8)], stand_in) == ["FusedMatMul"]
    fused = model.get_results()[0].input_value(0).node
    assert isinstance(fused, GpuFusedMatMul) and fused.post_ops == "bias,gelu"
    assert select_kernel(fused, CPU).exec_type == "cublas_gemm"


def test_matmul_residual_and_clamp(stand_in):
    x, r = Parameter(Type.f32, [4, 8]), Parameter(Type.f32, [4, 5])
    out = Add(Clamp(MatMul(x, const(rand(8, 5))), min=-0.5, max=0.5), r)
    model = Model([Result(out)], [x, r])
    assert fuse_and_check(model, [rand(4, 8), rand(4, 5)], stand_in) == ["FusedMatMul"]
    assert model.get_results()[0].input_value(0).node.post_ops == "clamp,sum"


def _split_convs(variadic: bool, lengths: tuple[int, ...] = (2, 2, 2)) -> tuple[Parameter, Concat]:
    x = Parameter(Type.f32, [1, 6, 5, 5])
    axis = Constant(np.asarray(1, np.int64))
    if variadic:
        split = VariadicSplit(x, axis, Constant(np.asarray(lengths, np.int64)))
    else:
        split = Split(x, axis, num_splits=3)
    convs = [_conv(split.output(i), lengths[i], 4) for i in range(3)]
    return x, Concat(convs, axis=1)


@pytest.mark.parametrize("variadic", [False, True])
def test_split_convs_concat_become_group_conv(stand_in, variadic):
    x, concat = _split_convs(variadic)
    model = Model([Result(concat)], [x])
    assert fuse_and_check(model, [rand(1, 6, 5, 5)], stand_in) == ["GroupConvolution"]
    group = model.get_results()[0].input_value(0).node
    assert list(group.get_input_partial_shape(1)) == [3, 4, 2, 3, 3]


def test_merged_group_conv_takes_the_bias_after_the_concat(stand_in):
    x, concat = _split_convs(False)
    model = Model([Result(Relu(Add(concat, const(rand(1, 12, 1, 1)))))], [x])
    assert fuse_and_check(model, [rand(1, 6, 5, 5)], stand_in) == ["FusedConvolution"]
    fused = model.get_results()[0].input_value(0).node
    assert fused.conv_type == "GroupConvolution" and fused.post_ops == "bias,relu"


def test_unequal_split_is_left_alone():
    x = Parameter(Type.f32, [1, 6, 5, 5])
    split = VariadicSplit(x, Constant(np.asarray(1, np.int64)), Constant(np.asarray([2, 4], np.int64)))
    model = Model([Result(Concat([_conv(split.output(0), 2, 4), _conv(split.output(1), 4, 4)], axis=1))], [x])
    gpu_fusions(model)
    assert types(model) == ["VariadicSplit", "Convolution", "Convolution", "Concat"]


def _fused_conv_model(post: str) -> tuple[Model, Output]:
    """A 3x3 convolution and the post-ops ``post`` names ("relu", "sum_relu", "clamp", "sum"), fused."""
    x = Parameter(Type.f32, [2, 4, 6, 6], name="x")
    y: Output = Add(_conv(x.output(0), 4, 4), const(rand(1, 4, 1, 1))).output(0)
    if post.startswith("sum"):
        y = Add(y, x).output(0)
    y = {"relu": Relu, "clamp": lambda v: Clamp(v, min=0.0, max=6.0)}.get(post.split("_")[-1], lambda v: v)(y)
    model = Model([Result(y)], [x])
    assert gpu_fusions(model)
    return model, model.get_results()[0].input_value(0)


@pytest.mark.parametrize("post", ["relu", "sum_relu"])
def test_conv_relu_chains_take_cudnn_fused_convolution(stand_in, monkeypatch, post):
    """On CUDA, ``bias [sum] relu`` goes to cuDNN's fused convolution: checked here with references standing in
    for ``torch.cudnn_convolution_relu`` / ``cudnn_convolution_add_relu`` (same arguments) on the CPU."""
    import torch
    import torch.nn.functional as F

    calls: list[str] = []

    def conv_relu(x, w, b, stride, padding, dilation, groups):
        calls.append("relu")
        return F.conv2d(x, w, b, stride, padding, dilation, groups).relu()

    def conv_add_relu(x, w, z, alpha, b, stride, padding, dilation, groups):
        calls.append("add_relu")
        assert z.is_contiguous(memory_format=torch.channels_last)
        return (F.conv2d(x, w, b, stride, padding, dilation, groups) + alpha * z).relu()

    monkeypatch.setattr(torch, "cudnn_convolution_relu", conv_relu)
    monkeypatch.setattr(torch, "cudnn_convolution_add_relu", conv_add_relu)
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    model, fused = _fused_conv_model(post)
    kernel = select_kernel(fused.node, torch.device("cuda"))  # only the kernel's choice: its tensors stay on the CPU
    assert kernel.exec_type == "cudnn_conv_fused"
    x = rand(2, 4, 6, 6)
    inputs = [torch.from_numpy(x if v.node.type_name == "Parameter" else v.node.get_value())
              for v in fused.node.input_values()]
    got = kernel.fn(inputs)[0]
    np.testing.assert_allclose(got.numpy(), run_reference(model, [x])[0], rtol=1e-5, atol=1e-5)
    assert calls == [{"relu": "relu", "sum_relu": "add_relu"}[post]]


@pytest.mark.parametrize("post", ["clamp", "sum"])
def test_other_conv_chains_are_not_cudnn_fused(stand_in, post):
    """Post-ops cuDNN's fused call does not cover: a Triton epilogue where Triton is (CUDA builds), else the
    convolution with its post-ops applied in place."""
    import torch

    _, fused = _fused_conv_model(post)
    kernel = select_kernel(fused.node, torch.device("cuda"))
    assert kernel.exec_type in ("cudnn_conv+triton_fused", "cudnn_conv")


def test_residual_add_goes_into_the_layer_norm(stand_in):
    x = Parameter(Type.f32, [2, 3, 16], name="x")
    h = Add(MatMul(x, const(rand(16, 16))), const(rand(16)))  # a projection and its bias: stays with the MatMul
    norm = FusedLayerNorm(Add(h, x), const(rand(16) + 1), const(rand(16)), eps=1e-6, name="ln")
    model = Model([Result(norm)], [x])
    assert fuse_and_check(model, [rand(2, 3, 16)], stand_in) == ["FusedMatMul", "ResidualLayerNorm"]
    fused = model.get_results()[0].input_value(0).node
    assert isinstance(fused, GpuResidualLayerNorm) and fused.friendly_name == "ln"
    assert [t for _, t in fused.fused_names] == ["Add"]
    assert fused.input_value(0).node.post_ops == "bias"


def test_layer_norm_of_a_broadcast_add_is_left_alone(stand_in):
    x = Parameter(Type.f32, [2, 3, 16], name="x")
    norm = FusedLayerNorm(Add(x, const(rand(16))), const(rand(16) + 1), const(rand(16)), eps=1e-6)
    model = Model([Result(norm)], [x])
    gpu_fusions(model)
    assert "ResidualLayerNorm" not in types(model)
