"""MVNFusion: mean-variance normalization written out (PaddlePaddle's and PyTorch's pre-opset-17 LayerNorm) -> MVN,
which the LayerNorm fusion then takes with its scale and shift."""

from __future__ import annotations

import io

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.transformations.mvn_fusion import MVNFusion

RNG = np.random.default_rng(11)
F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def types(m):
    return [n.type_name for n in m.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


def c(value):
    return ops.constant(np.array(value, np.float32))


def written_out(x, axes=(-1,), square="power", root="sqrt", eps_mode="inside", divide="divide", own_copy=False):
    """``(x - mean) / sqrt(var + eps)`` in one of the spellings exporters use."""
    axes_c = ops.constant(np.array(axes, np.int64))
    d = ops.subtract(x, ops.reduce_mean(x, axes_c, keep_dims=True))
    dv = ops.subtract(x, ops.reduce_mean(x, axes_c, keep_dims=True)) if own_copy else d
    sq = ops.power(dv, c(2.0)) if square == "power" else ops.multiply(dv, dv)
    var = ops.reduce_mean(sq, axes_c, keep_dims=True)
    if divide == "rsqrt":
        return ops.multiply(d, ops.power(ops.add(var, c(1e-5)), c(-0.5)))

    def root_of(v):
        return ops.sqrt(v) if root == "sqrt" else ops.power(v, c(0.5))

    s = root_of(ops.add(var, c(1e-5))) if eps_mode == "inside" else ops.add(root_of(var), c(1e-5))
    if divide == "divide":
        return ops.divide(d, s)
    if divide == "power":
        return ops.multiply(ops.power(s, c(-1.0)), d)
    return ops.multiply(d, ops.divide(c(1.0), s))  # ONNX's Reciprocal


def layer_norm(x, n, **kw):
    gamma, beta = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    return ops.add(ops.multiply(written_out(x, **kw), ops.constant(gamma)), ops.constant(beta))


@pytest.mark.parametrize("kw", [{}, {"square": "multiply"}, {"root": "power"}, {"eps_mode": "outside"},
                                {"divide": "power"}, {"divide": "reciprocal"}, {"divide": "rsqrt"},
                                {"own_copy": True}])
def test_spellings_of_a_layer_norm_become_one_fused_layer_norm(kw):
    """Each spelling: one MVN, and on the CPU one FusedLayerNorm with the scale and shift."""
    x = ops.parameter([2, 40, 120], ov.Type.f32, name="x")
    model = ov.Model([layer_norm(x, 120, **kw)], [x])
    data = (RNG.standard_normal((2, 40, 120)) * 3 + 1).astype(np.float32)
    want = run_reference(model, [data])[0]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    executed = types(compiled.get_runtime_model())
    if kw.get("eps_mode") == "outside":  # not a LayerNorm (eps outside the root): an MVN, then the affine
        assert executed[0] == "MVN" and "ReduceMean" not in executed
    else:
        assert executed == ["FusedLayerNorm"]
    np.testing.assert_allclose(compiled({0: data})[0], want, rtol=1e-4, atol=1e-4)
    p = ops.parameter([2, 40, 120], ov.Type.f32)
    m = ov.Model([written_out(p, **kw)], [p])
    assert MVNFusion()(m).modified and types(m) == ["MVN"]
    (mvn,) = [n for n in m.get_ordered_ops() if n.type_name == "MVN"]
    assert mvn.eps_mode == ("outside_sqrt" if kw.get("eps_mode") == "outside" else "inside_sqrt")
    assert mvn.eps == pytest.approx(1e-5) and mvn.normalize_variance


def test_other_axes_become_an_mvn_with_the_same_values():
    x = ops.parameter([2, 3, 8, 8], ov.Type.f32)
    model = ov.Model([written_out(x, axes=(2, 3))], [x])
    data = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    want = run_reference(model, [data])[0]
    assert MVNFusion()(model).modified and types(model) == ["MVN"]
    np.testing.assert_allclose(run_reference(model, [data])[0], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ov.Core().compile_model(model, "CPU", F32)({0: data})[0], want, rtol=1e-4,
                               atol=1e-4)


def test_near_misses_are_left_alone():
    x = ops.parameter([2, 16], ov.Type.f32)
    axes = ops.constant(np.array([-1], np.int64))
    # the centered value read outside the pattern
    d = ops.subtract(x, ops.reduce_mean(x, axes, keep_dims=True))
    var = ops.reduce_mean(ops.multiply(d, d), axes, keep_dims=True)
    read_elsewhere = [ops.divide(d, ops.sqrt(ops.add(var, c(1e-5)))), ops.relu(d)]
    # the variance over other axes than the mean
    d2 = ops.subtract(x, ops.reduce_mean(x, axes, keep_dims=True))
    var2 = ops.reduce_mean(ops.multiply(d2, d2), ops.constant(np.array([0, 1], np.int64)), keep_dims=True)
    other_axes = ops.divide(d2, ops.sqrt(ops.add(var2, c(1e-5))))
    # a variable eps
    e = ops.parameter([1], ov.Type.f32)
    d3 = ops.subtract(x, ops.reduce_mean(x, axes, keep_dims=True))
    var3 = ops.reduce_mean(ops.multiply(d3, d3), axes, keep_dims=True)
    variable_eps = ops.divide(d3, ops.sqrt(ops.add(var3, e)))
    # a cube, not a square
    d4 = ops.subtract(x, ops.reduce_mean(x, axes, keep_dims=True))
    var4 = ops.reduce_mean(ops.power(d4, c(3.0)), axes, keep_dims=True)
    cube = ops.divide(d4, ops.sqrt(ops.add(var4, c(1e-5))))
    m = ov.Model([*read_elsewhere, other_axes, variable_eps, cube], [x, e])
    before = types(m)
    assert not MVNFusion()(m).modified and types(m) == before


def test_torch_layer_norm_exported_at_opset_16():
    """What PyTorch's exporter writes for nn.LayerNorm below opset 17 (no LayerNormalization op): one
    FusedLayerNorm, PyTorch's values."""
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.LayerNorm(64), torch.nn.ReLU()).eval()
    with torch.no_grad():
        net[1].weight.uniform_(0.5, 1.5)
        net[1].bias.uniform_(-0.5, 0.5)
    x = torch.randn(3, 10, 32)
    f = io.BytesIO()
    torch.onnx.export(net, (x,), f, opset_version=16, dynamo=False)
    compiled = ov.Core().compile_model(ov.Core().read_model(f.getvalue()), "CPU", F32)
    assert "FusedLayerNorm" in types(compiled.get_runtime_model())
    assert not {"ReduceMean", "Sqrt", "Divide"} & set(types(compiled.get_runtime_model()))
    with torch.no_grad():
        want = net(x).numpy()
    np.testing.assert_allclose(compiled({0: x.numpy()})[0], want, rtol=1e-4, atol=1e-4)
