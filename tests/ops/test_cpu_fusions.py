"""CPU convolution fusion: the fused kernel against the unfused graph's NumPy reference, per dtype and
attribute set; profiling statuses; the runtime and exported graphs; the Plan's fast loop."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import bf16_kernel, exec_type
from vinerun.errors import InferenceError
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ops.activations import Clamp, Elu, Gelu, HSwish, Mish, Relu, Sigmoid, SoftPlus, Swish, Tanh
from vinerun.ops.arithmetic import Add
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.matmul import MatMul
from vinerun.plugins.cpu.fused_ops import FusedConvolution, conv_fusion
from vinerun.plugins.cpu.plan import Plan
from vinerun.transformations.fusions import match_chain

RNG = np.random.default_rng(11)
BF16 = np.dtype(ml_dtypes.bfloat16)
#: these tests check kernels against the reference at the model's own precision: no bf16 lowering (a CPU
#: with native bf16 would lower f32 models by default; tests/ops/test_cpu_bf16.py covers that)
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
ACTS = {
    "relu": lambda v: Relu(v),
    "clamp": lambda v: Clamp(v, min=0.0, max=6.0),
    "sigmoid": lambda v: Sigmoid(v),
    "tanh": lambda v: Tanh(v),
    "hswish": lambda v: HSwish(v),
    "swish": lambda v: Swish(v),
    "swish_beta": lambda v: Swish(v, Constant(np.array(1.5, v.get_element_type().to_dtype()))),
    "gelu": lambda v: Gelu(v),
    "gelu_tanh": lambda v: Gelu(v, approximation_mode="TANH"),
    "elu": lambda v: Elu(v, alpha=0.7),
    "mish": lambda v: Mish(v),
    "softplus": lambda v: SoftPlus(v),
}


def rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def conv_graph(dtype=np.float32, c_in=8, c_out=8, size=9, groups=None, strides=(1, 1), pads=(1, 1, 1, 1),
               dilations=(1, 1), kernel=3, bias=True, act=None, residual=False, post=None, bias_first=False,
               rank=2, auto_pad="explicit"):
    """A Parameter -> conv -> [bias] -> [act] -> [+ residual] -> [post act] -> Result model."""
    spatial = [size] * rank
    x = Parameter(dtype, [1, c_in, *spatial], name="x")
    if groups:
        w = Constant(rand([groups, c_out // groups, c_in // groups] + [kernel] * rank, dtype))
        conv = GroupConvolution(x, w, name="conv", strides=list(strides[:rank]), pads_begin=list(pads[:rank]),
                                pads_end=list(pads[2:2 + rank]), dilations=list(dilations[:rank]), auto_pad=auto_pad)
    else:
        w = Constant(rand([c_out, c_in] + [kernel] * rank, dtype))
        conv = Convolution(x, w, name="conv", strides=list(strides[:rank]), pads_begin=list(pads[:rank]),
                           pads_end=list(pads[2:2 + rank]), dilations=list(dilations[:rank]), auto_pad=auto_pad)
    v = conv.output(0)
    params = [x]
    if bias:
        b = Constant(rand([1, c_out] + [1] * rank, dtype))
        v = (Add(b, v, name="bias") if bias_first else Add(v, b, name="bias")).output(0)
    if act:
        a = ACTS[act](v)
        a.set_friendly_name("act")
        v = a.output(0)
    if residual:
        r = Parameter(dtype, list(v.partial_shape.to_shape()), name="r")
        params.append(r)
        v = Add(r, v, name="sum").output(0)
    if post:
        p = ACTS[post](v)
        p.set_friendly_name("post")
        v = p.output(0)
    return Model([Result(v)], params, "fusion")


def tolerance(dtype) -> dict:
    return {np.dtype(np.float32): {"rtol": 1e-4, "atol": 1e-4}, np.dtype(np.float64): {"rtol": 1e-9, "atol": 1e-9},
            np.dtype(np.float16): {"rtol": 2e-2, "atol": 5e-2}, BF16: {"rtol": 5e-2, "atol": 2e-1}}[np.dtype(dtype)]


def check_fused(model: Model, dtype=np.float32, kinds: str | None = None, exec_prefix: str | None = None):
    """Compile on CPU, check the graph fused into one FusedConvolution, compare with the reference."""
    inputs = [rand(list(p.get_partial_shape().to_shape()), dtype) for p in model.get_parameters()]
    want = run_reference(model, inputs)[0]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    runtime = compiled.get_runtime_model()
    fused = [n for n in runtime.get_ordered_ops() if n.type_name == "FusedConvolution"]
    assert len(fused) == 1
    assert [n.type_name for n in runtime.get_ordered_ops()
            if n.type_name not in ("Parameter", "Constant", "Result")] == ["FusedConvolution"]
    if kinds is not None:
        assert fused[0].post_ops == kinds
    plan = compiled._impl.plan
    if exec_prefix is not None:
        assert plan.steps[0].kernel.exec_type.startswith(exec_prefix), plan.steps[0].kernel.exec_type
    got = compiled.create_infer_request().infer(inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **tolerance(dtype))
    # the fused node's own reference agrees too (it is composed from the original ops)
    ref = fused[0].evaluate([*inputs[:1], *[fused[0].const_input(i) if fused[0].const_input(i) is not None
                                            else inputs[1] for i in range(1, fused[0].get_input_size())]])[0]
    np.testing.assert_allclose(ref.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("act", sorted(ACTS))
def test_each_activation_f32(act):
    check_fused(conv_graph(act=act), kinds=f"bias,{ACTS[act](Parameter(np.float32, [1])).type_name.lower()}",
                exec_prefix="onednn")


@pytest.mark.parametrize("post", [None, "relu", "sigmoid"])
@pytest.mark.parametrize("act", [None, "relu", "clamp"])
def test_residual_sum(act, post):
    kinds = ",".join(["bias"] + ([ACTS[act](Parameter(np.float32, [1])).type_name.lower()] if act else []) + ["sum"]
                     + ([ACTS[post](Parameter(np.float32, [1])).type_name.lower()] if post else []))
    check_fused(conv_graph(act=act, residual=True, post=post), kinds=kinds, exec_prefix="onednn")


@pytest.mark.parametrize("attrs", [
    {"strides": (2, 2)},
    {"pads": (0, 0, 0, 0)},
    {"dilations": (2, 2), "pads": (2, 2, 2, 2)},
    {"strides": (2, 1), "dilations": (1, 2), "pads": (1, 2, 1, 2)},
    {"kernel": 1, "pads": (0, 0, 0, 0)},
    {"pads": (0, 1, 1, 0)},  # asymmetric: the ATen path
    {"auto_pad": "same_upper", "strides": (2, 2)},
    {"groups": 2},
    {"groups": 8},  # depthwise
    {"groups": 8, "c_out": 16, "strides": (2, 2)},  # depthwise, multiplier 2
    {"bias_first": True},
    {"bias": False, "act": "relu"},
])
def test_attributes_f32(attrs):
    attrs = {"act": "relu", **attrs}
    check_fused(conv_graph(**attrs))


@pytest.mark.parametrize("groups", [None, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16])
def test_dtypes(dtype, groups):
    prefixes = {np.dtype(np.float32): "onednn", BF16: bf16_kernel("onednn", "onednn", "aten")}
    prefix = prefixes.get(np.dtype(dtype), "aten")
    check_fused(conv_graph(dtype, groups=groups, act="relu", residual=True, post="relu"), dtype, exec_prefix=prefix)


@pytest.mark.parametrize(("rank", "kernel"), [(1, "onednn_conv1d"), (3, "aten")])
def test_other_ranks_use_aten(rank, kernel):
    """3-D convolutions run ATen; static 1-D ones by constant filters oneDNN (:mod:`.conv1d_dnnl`)."""
    check_fused(conv_graph(rank=rank, pads=(1, 1, 1, 1, 1, 1), strides=(1, 1, 1), dilations=(1, 1, 1),
                           size=5, act="sigmoid", residual=True), exec_prefix=kernel)


def test_channels_last_between_convs_and_residual():
    """Two fused convs in a row plus a residual (a ResNet block) match the reference; the inner value stays
    channels-last and the model output is contiguous."""
    x = Parameter(np.float32, [1, 8, 12, 12], name="x")
    v = x.output(0)
    for i in range(3):
        w = Constant(rand([8, 8, 3, 3]))
        c = Convolution(v, w, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], name=f"c{i}")
        a = Add(c, Constant(rand([1, 8, 1, 1])), name=f"b{i}")
        v = (Relu(Add(a, x, name=f"s{i}")) if i == 2 else Relu(a)).output(0)
    model = Model([Result(v)], [x], "block")
    inputs = [rand([1, 8, 12, 12])]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(inputs)[0]
    assert got.flags.c_contiguous
    np.testing.assert_allclose(got, run_reference(model, inputs)[0], rtol=1e-4, atol=1e-4)
    assert [s.kernel.exec_type for s in compiled._impl.plan.steps] == ["onednn_conv2d", "onednn_conv2d",
                                                                       "onednn_conv2d_sum"]


def test_profiling_statuses():
    model = conv_graph(act=None, residual=True, post="relu")
    compiled = ov.Core().compile_model(model, "CPU", {**F32, "PERF_COUNT": True})
    req = compiled.create_infer_request()
    req.infer([rand([1, 8, 9, 9]), rand([1, 8, 9, 9])])
    info = {(p.node_name, p.node_type): p.status.name for p in req.get_profiling_info()}
    assert info == {("conv", "FusedConvolution"): "EXECUTED", ("bias", "Add"): "OPTIMIZED_OUT",
                    ("sum", "Add"): "OPTIMIZED_OUT", ("post", "Relu"): "OPTIMIZED_OUT"}


def test_export_graph_is_unfused_and_writable(tmp_path):
    model = conv_graph(act="relu", residual=True)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    exported = compiled._impl.export_graph()
    assert "FusedConvolution" not in {n.type_name for n in exported.get_ordered_ops()}
    ov.save_model(exported, str(tmp_path / "m.xml"))
    assert "FusedConvolution" in {n.type_name for n in compiled.get_runtime_model().get_ordered_ops()}


@pytest.mark.parametrize("case", ["two_readers", "result_between", "broadcast_sum", "const_not_per_channel"])
def test_not_fused(case):
    """Chains whose intermediate value is read elsewhere, or whose Add is not a bias/sum, stop early."""
    x = Parameter(np.float32, [1, 4, 6, 6], name="x")
    c = Convolution(x, Constant(rand([4, 4, 3, 3])), strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                    dilations=[1, 1])
    if case == "two_readers":
        outs = [Relu(c), Sigmoid(c)]
    elif case == "result_between":
        outs = [c, Relu(c)]
    elif case == "broadcast_sum":
        outs = [Add(c, Parameter(np.float32, [1, 1, 6, 6], name="r"))]
    else:
        outs = [Add(c, Constant(rand([1, 4, 6, 6])))]
    params = [x] + [o.input_value(1).node for o in outs
                    if o.get_input_size() > 1 and isinstance(o.input_value(1).node, Parameter)]
    model = Model([Result(o) for o in outs], params, "nofuse")
    assert match_chain(c) is None
    assert not conv_fusion()(model).modified


def test_fused_node_clones():
    model = conv_graph(act="relu", residual=True)
    conv_fusion()(model)
    clone = model.clone()
    fused = [n for n in clone.get_ordered_ops() if isinstance(n, FusedConvolution)][0]
    assert fused.post_ops == "bias,relu,sum" and len(fused.steps) == 3


def test_plan_fast_loop_matches_profiled_and_names_failures(monkeypatch):
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")  # Python steps (Add and Relu would run as one native segment)
    x = Parameter(np.float32, [3], name="x")
    v = x.output(0)
    for i in range(20):
        v = Relu(Add(v, Constant(np.float32(-0.1)), name=f"a{i}"), name=f"r{i}").output(0)
    plan = Plan(Model([Result(v)], [x], "chain"))
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    profile: list = []
    fast, profiled = plan.run([xv]), plan.run([xv], profile)
    np.testing.assert_allclose(fast[0], profiled[0])
    np.testing.assert_allclose(fast[0], np.maximum(xv - 2.0, 0), rtol=1e-5)
    assert len(profile) == 40 and {p.status.name for p in profile} == {"EXECUTED"}

    def boom(_inputs):
        raise ValueError("bad")

    plan._fast[5] = (boom, *plan._fast[5][1:])
    with pytest.raises(InferenceError, match="'r2' failed: ValueError: bad"):
        plan.run([xv])


@pytest.mark.parametrize("attrs", [{}, {"groups": 8}, {"strides": (2, 2)}, {"pads": (0, 1, 1, 0)}])
def test_plain_convolution_prepacked(attrs):
    """A convolution with nothing to fuse still runs on oneDNN (asymmetric pads too: oneDNN takes both ends)
    and matches the reference."""
    model = conv_graph(bias=False, **attrs)
    inputs = [rand([1, 8, 9, 9])]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    assert compiled._impl.plan.steps[0].kernel.exec_type.startswith("onednn")
    got = compiled.create_infer_request().infer(inputs)[0]
    assert got.flags.c_contiguous
    np.testing.assert_allclose(got, run_reference(model, inputs)[0], rtol=1e-4, atol=1e-4)


def test_channels_last_through_max_pool():
    """conv -> MaxPool -> conv keeps channels-last inside; MaxPool's and the last conv's outputs that leave
    the model are C-contiguous; values match the reference."""
    from vinerun.ops.pooling import MaxPool

    x = Parameter(np.float32, [1, 4, 16, 16], name="x")
    c1 = Convolution(x, Constant(rand([8, 4, 3, 3])), strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                     dilations=[1, 1])
    r1 = Relu(Add(c1, Constant(rand([1, 8, 1, 1]))))
    pool = MaxPool(r1, strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], kernel=[3, 3])
    c2 = Convolution(pool.output(0), Constant(rand([8, 8, 1, 1])), strides=[1, 1], pads_begin=[0, 0],
                     pads_end=[0, 0], dilations=[1, 1])
    r2 = Relu(Add(c2, Constant(rand([1, 8, 1, 1]))))
    for outputs in ([r2], [r2, pool.output(0)]):
        model = Model([Result(o) for o in outputs], [x], "pool")
        inputs = [rand([1, 4, 16, 16])]
        got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer(inputs)
        want = run_reference(model, inputs)
        for i, w in enumerate(want):
            g = got[i]
            assert g.flags.c_contiguous
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_prepacked_weights_follow_the_stream_thread_count():
    """oneDNN packs filters for the thread count that runs them: each stream gets its own copy."""
    import threading

    import torch

    from vinerun.plugins.cpu.kernels.fused_conv import _PackedWeights

    w = torch.randn(8, 4, 3, 3)
    x = torch.randn(1, 4, 16, 16)
    packed = _PackedWeights(w, [1, 1], [1, 1], [1, 1], 1, [1, 4, 16, 16])
    outs: dict[int, torch.Tensor] = {}

    def run(threads: int) -> None:
        torch.set_num_threads(threads)
        outs[threads] = torch.ops.mkldnn._convolution_pointwise(x, packed.get(), None, [1, 1], [1, 1], [1, 1], 1,
                                                                "none", [], "")

    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            t = threading.Thread(target=run, args=(threads,))
            t.start()
            t.join()
    finally:
        torch.set_num_threads(before)
    assert {1, 2} <= set(packed.by_threads)
    want = torch.nn.functional.conv2d(x, w, padding=1)
    for y in outs.values():
        torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-4)


# --- MatMul fusion ---------------------------------------------------------------------------------------------


def matmul_graph(dtype=np.float32, shape=(2, 5, 12), n=7, bias=True, act=None, transpose_b=False, bias_first=False):
    """A Parameter -> MatMul(constant 2-D weight) -> [bias] -> [act] -> Result model."""
    from vinerun.ops.matmul import MatMul

    x = Parameter(dtype, list(shape), name="x")
    w = Constant(rand([n, shape[-1]] if transpose_b else [shape[-1], n], dtype))
    v = MatMul(x, w, name="mm", transpose_b=transpose_b).output(0)
    if bias:
        b = Constant(rand([n], dtype))
        v = (Add(b, v, name="bias") if bias_first else Add(v, b, name="bias")).output(0)
    if act:
        a = ACTS[act](v)
        a.set_friendly_name("act")
        v = a.output(0)
    return Model([Result(v)], [x], "mm_fusion")


def check_fused_matmul(model: Model, dtype=np.float32, kinds: str = "", exec_type: str | None = None):
    """Compile on CPU, check one FusedMatMul replaced the chain, compare kernel and node reference with the graph's."""
    from vinerun.plugins.cpu.fused_ops import FusedMatMul
    from vinerun.plugins.cpu.kernels.fused_matmul import f32_exec_type

    exec_type = exec_type or f32_exec_type()  # f32: MKL addmm without AVX-512, else oneDNN (direct where installed)

    inputs = [rand(list(model.get_parameters()[0].get_partial_shape().to_shape()), dtype)]
    want = run_reference(model, inputs)[0]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    ops = [n for n in compiled.get_runtime_model().get_ordered_ops()
           if n.type_name not in ("Parameter", "Constant", "Result")]
    assert [n.type_name for n in ops] == ["FusedMatMul"]
    fused = ops[0]
    assert isinstance(fused, FusedMatMul) and fused.post_ops == kinds
    assert compiled._impl.plan.steps[0].kernel.exec_type == exec_type
    got = compiled.create_infer_request().infer(inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **tolerance(dtype))
    ref = fused.evaluate([inputs[0], *[fused.const_input(i) for i in range(1, fused.get_input_size())]])[0]
    np.testing.assert_allclose(ref.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("act", sorted(ACTS))
def test_matmul_each_activation_f32(act):
    name = ACTS[act](Parameter(np.float32, [1])).type_name.lower()
    check_fused_matmul(matmul_graph(act=act), kinds=f"bias,{name}")


@pytest.mark.parametrize("act", [None, "relu", "gelu"])
@pytest.mark.parametrize("shape", [(6, 12), (2, 5, 12), (2, 3, 4, 12)])
def test_matmul_without_bias_and_batched(act, shape):
    kinds = "" if act is None else ACTS[act](Parameter(np.float32, [1])).type_name.lower()
    check_fused_matmul(matmul_graph(shape=shape, bias=False, act=act), kinds=kinds)


@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_transpose_b_and_bias_order(transpose_b, bias_first):
    check_fused_matmul(matmul_graph(transpose_b=transpose_b, bias_first=bias_first, act="relu"),
                       kinds="bias,relu")


@pytest.mark.parametrize("dtype", [np.float64, np.float16, BF16])
def test_matmul_other_dtypes_use_aten(dtype):
    """f64 and f16 run ATen; bf16 oneDNN where the CPU has AVX-512 (directly where the binding is installed)."""
    want = bf16_kernel("onednn_matmul", "onednn_linear", "aten_matmul_fused") if dtype == BF16 else "aten_matmul_fused"
    check_fused_matmul(matmul_graph(dtype=dtype, act="sigmoid"), dtype=dtype, kinds="bias,sigmoid",
                       exec_type=exec_type(want, dtype))


@pytest.mark.parametrize("act", ["relu", "sigmoid"])
def test_matmul_dynamic_batch(act):
    """A dynamic leading dimension runs any batch: a oneDNN primitive per row count for the first few counts
    (direct binding, AVX-512), then the PyTorch path (a single row on MKL's addmm)."""
    from vinerun.plugins.cpu.kernels.matmul_dnnl import ROW_COUNTS

    model = matmul_graph(act=act)
    model.reshape({"x": [-1, -1, 12]})
    compiled = ov.Core().compile_model(model, "CPU", F32)
    shapes = [[1, 1, 12], [1, 5, 12], [3, 5, 12], [2, 1, 12], [7, 1, 12], [1, 9, 12], [1, 1, 12], [3, 5, 12]]
    assert len({a * b for a, b, _ in shapes}) > ROW_COUNTS  # past the primitives: the fallback runs too
    request = compiled.create_infer_request()
    for shape in shapes:
        x = rand(shape)
        np.testing.assert_allclose(request.infer([x])[0], run_reference(model, [x])[0], rtol=1e-4, atol=1e-4)


def test_matmul_dynamic_rows_bf16():
    """bf16 with rows known at run time (as in a decoder step), then a residual add (not fused: dynamic shape)."""
    x = Parameter(BF16, [-1, 16], name="x")
    y = Add(MatMul(x, Constant(rand([16, 16], BF16))), x)
    model = Model([Result(y.output(0))], [x], "dyn_rows")
    compiled = ov.Core().compile_model(model, "CPU")
    assert compiled._impl.plan.steps[0].kernel.exec_type == exec_type(
        bf16_kernel("onednn_matmul", "onednn_linear", "aten_matmul_fused"), BF16)
    request = compiled.create_infer_request()
    for rows in (1, 3, 1, 6):
        data = rand([rows, 16], BF16)
        got, want = request.infer([data])[0], run_reference(model, [data])[0]
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), **tolerance(BF16))


@pytest.mark.parametrize("case", ["weight_not_constant", "weight_3d", "bias_not_per_channel", "two_readers"])
def test_matmul_not_fused(case):
    from vinerun.ops.matmul import MatMul
    from vinerun.plugins.cpu.fused_ops import matmul_fusion
    from vinerun.transformations.matmul_fusion import match_matmul_chain

    x = Parameter(np.float32, [2, 5, 12], name="x")
    params = [x]
    if case == "weight_not_constant":
        w = Parameter(np.float32, [12, 7], name="w")
        params.append(w)
    else:
        w = Constant(rand([2, 12, 7] if case == "weight_3d" else [12, 7]))
    mm = MatMul(x, w)
    if case == "bias_not_per_channel":
        outs = [Add(mm, Constant(rand([5, 7])))]
    elif case == "two_readers":
        outs = [Relu(mm), Sigmoid(mm)]
    else:
        outs = [Relu(mm)]
    model = Model([Result(o) for o in outs], params, "nofuse")
    chain = match_matmul_chain(mm)
    if case in ("weight_not_constant", "weight_3d"):
        assert chain is None and not matmul_fusion()(model).modified
    else:
        assert chain is not None and chain.steps == []  # only the weight is prepacked
        matmul_fusion()(model)
        assert {"Add", "Relu", "Sigmoid"} & {n.type_name for n in model.get_ordered_ops()}


def test_matmul_profiling_statuses():
    compiled = ov.Core().compile_model(matmul_graph(act="gelu"), "CPU", {**F32, "PERF_COUNT": True})
    req = compiled.create_infer_request()
    req.infer([rand([2, 5, 12])])
    info = {(p.node_name, p.node_type): p.status.name for p in req.get_profiling_info()}
    assert info == {("mm", "FusedMatMul"): "EXECUTED", ("bias", "Add"): "OPTIMIZED_OUT",
                    ("act", "Gelu"): "OPTIMIZED_OUT"}


def test_matmul_packed_weight_follows_the_stream_thread_count():
    import threading

    import torch

    from vinerun.plugins.cpu.kernels.fused_matmul import PackedLinearWeight

    w, x = torch.randn(16, 8), torch.randn(3, 8)
    packed = PackedLinearWeight(w, 3)
    outs: dict[int, torch.Tensor] = {}

    def run(threads: int) -> None:
        torch.set_num_threads(threads)
        outs[threads] = torch.ops.mkldnn._linear_pointwise(x, packed.get(), None, "none", [], "")

    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            t = threading.Thread(target=run, args=(threads,))
            t.start()
            t.join()
    finally:
        torch.set_num_threads(before)
    assert {1, 2} <= set(packed.by_threads)
    for y in outs.values():
        torch.testing.assert_close(y, x @ w.T, rtol=1e-4, atol=1e-4)


# --- GELU (erf form) fusion ------------------------------------------------------------------------------------


def erf_gelu_graph(form: str, sqrt2: float = float(np.sqrt(2))):
    """x -> x * 0.5 * (1 + erf(x / sqrt2)) in one of the exporters' spellings."""
    from vinerun.ops.arithmetic import Divide, Multiply
    from vinerun.ops.unary_math import Erf

    x = Parameter(np.float32, [2, 9], name="x")
    c = lambda v: Constant(np.array(v, np.float32))  # noqa: E731
    scaled = Multiply(c(1 / sqrt2), x) if form == "mul_inv" else Divide(x, c(sqrt2))
    one_plus = Add(c(1.0), Erf(scaled))
    if form == "half_last":
        y = Multiply(Multiply(x, one_plus), c(0.5))
    else:
        y = Multiply(Multiply(c(0.5), x), one_plus)
    return Model([Result(y)], [x], "gelu")


@pytest.mark.parametrize("form", ["half_first", "half_last", "mul_inv"])
def test_erf_gelu_fused(form):
    from vinerun.transformations.gelu_fusion import GeluFusion

    model = erf_gelu_graph(form)
    x = rand([2, 9])
    want = run_reference(model, [x])[0]
    assert GeluFusion()(model).modified
    assert [n.type_name for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Result")] == ["Gelu"]
    np.testing.assert_allclose(run_reference(model, [x])[0], want, rtol=1e-5, atol=1e-6)


def test_erf_gelu_wrong_constant_not_fused():
    from vinerun.transformations.gelu_fusion import GeluFusion

    assert not GeluFusion()(erf_gelu_graph("half_first", sqrt2=1.3)).modified


def tanh_gelu_graph(cube: str, k: float = 0.044715):
    """x -> 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + k * x**3))): GPT-2's "gelu_new" as torch exports it."""
    from vinerun.ops.activations import Tanh
    from vinerun.ops.arithmetic import Multiply, Power

    x = Parameter(np.float32, [2, 9], name="x")
    c = lambda v: Constant(np.array(v, np.float32))  # noqa: E731
    x3 = Power(x, c(3.0)) if cube == "pow" else Multiply(x, Multiply(x, x))
    inner = Add(x, Multiply(x3, c(k)))
    y = Multiply(Multiply(x, c(0.5)), Add(c(1.0), Tanh(Multiply(inner, c(np.sqrt(2 / np.pi))))))
    return Model([Result(y)], [x], "gelu_new")


def keras_gelu_graph():
    """x * (0.5 * tanh(sqrt(2/pi) * (x + x * (x * (0.044715 * x)))) + 0.5): Keras' approximate GELU as tf2onnx
    writes it (the magika classifier)."""
    from vinerun.ops.activations import Tanh
    from vinerun.ops.arithmetic import Multiply

    x = Parameter(np.float32, [2, 9], name="x")
    c = lambda v: Constant(np.array(v, np.float32))  # noqa: E731
    cubic = Multiply(x, Multiply(x, Multiply(c(0.044715), x)))
    t = Tanh(Multiply(c(np.sqrt(2 / np.pi)), Add(x, cubic)))
    return Model([Result(Multiply(x, Add(Multiply(t, c(0.5)), c(0.5))))], [x], "keras_gelu")


@pytest.mark.parametrize("cube", ["pow", "mul", "keras"])
def test_tanh_gelu_fused(cube):
    from vinerun.transformations.gelu_fusion import GeluFusion

    model = keras_gelu_graph() if cube == "keras" else tanh_gelu_graph(cube)
    x = rand([2, 9]) * 3
    want = run_reference(model, [x])[0]
    assert GeluFusion()(model).modified
    ops_left = [n for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Result")]
    assert [n.type_name for n in ops_left] == ["Gelu"] and ops_left[0].approximation_mode.upper() == "TANH"
    np.testing.assert_allclose(run_reference(model, [x])[0], want, rtol=1e-5, atol=1e-5)
    if cube != "keras":
        assert not GeluFusion()(tanh_gelu_graph(cube, k=0.05)).modified


def test_matmul_bias_erf_gelu_becomes_one_node():
    """The BERT feed-forward spelling: MatMul + bias + erf-form GELU compile into one FusedMatMul."""
    from vinerun.ops.arithmetic import Divide, Multiply
    from vinerun.ops.matmul import MatMul
    from vinerun.ops.unary_math import Erf

    x = Parameter(np.float32, [1, 6, 12], name="x")
    h = Add(MatMul(x, Constant(rand([12, 16]))), Constant(rand([16])))
    c = lambda v: Constant(np.array(v, np.float32))  # noqa: E731
    y = Multiply(Multiply(h, c(0.5)), Add(Erf(Divide(h, c(np.sqrt(2)))), c(1.0)))
    model = Model([Result(y)], [x], "ff")
    compiled = ov.Core().compile_model(model, "CPU", F32)
    ops = [n for n in compiled.get_runtime_model().get_ordered_ops()
           if n.type_name not in ("Parameter", "Constant", "Result")]
    assert [(n.type_name, n.post_ops) for n in ops] == [("FusedMatMul", "bias,gelu")]
    xv = rand([1, 6, 12])
    np.testing.assert_allclose(compiled.create_infer_request().infer([xv])[0], run_reference(model, [xv])[0],
                               rtol=1e-4, atol=1e-4)
