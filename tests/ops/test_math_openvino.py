"""The element-wise ops written to OpenVINO IR, read back by openvino, agree with vinerun (openvino as oracle)."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops import activations as act
from vinerun.ops import arithmetic as ar
from vinerun.ops import bitwise as bw
from vinerun.ops import comparison as cmp
from vinerun.ops import convert as cv
from vinerun.ops import logical as lg
from vinerun.ops import unary_math as um

openvino = pytest.importorskip("openvino")


def _f(value) -> Constant:
    return Constant(np.asarray(value, np.float32))


def _i(value) -> Constant:
    return Constant(np.asarray(value, np.int32))


def _outputs(x: Parameter, i: Parameter) -> dict:
    negative = cmp.Less(x, _f(0.0))
    return {
        "abs": um.Abs(x), "neg": um.Negative(x), "exp": um.Exp(x), "floor": um.Floor(x), "ceil": um.Ceiling(x),
        "round_even": um.Round(x), "round_away": um.Round(x, mode="half_away_from_zero"), "sign": um.Sign(x),
        "sin": um.Sin(x), "atan": um.Atan(x), "asinh": um.Asinh(x), "erf": um.Erf(x), "isnan": um.IsNaN(x),
        "isinf": um.IsInf(x, detect_negative=False), "relu": act.Relu(x), "sigmoid": act.Sigmoid(x),
        "elu": act.Elu(x, alpha=0.5), "selu": act.Selu(x, _f(1.5), _f(1.1)), "prelu": act.PRelu(x, _f([0.1])),
        "hard_sigmoid": act.HardSigmoid(x, _f(0.2), _f(0.5)), "hswish": act.HSwish(x),
        "softplus": act.SoftPlus(x), "softsign": act.SoftSign(x), "gelu": act.Gelu(x),
        "gelu_tanh": act.Gelu(x, approximation_mode="TANH"), "mish": act.Mish(x), "swish": act.Swish(x, _f(1.3)),
        "clamp": act.Clamp(x, min=-0.5, max=0.7), "div_trunc": ar.Divide(i, _i(3), m_pythondiv=False),
        "floor_mod": ar.FloorMod(i, _i(3)), "mod": ar.Mod(i, _i(3)),
        "pow": ar.Power(x, _f(2.0)), "less": negative, "not_equal": cmp.NotEqual(x, _f(0.0)),
        "and": lg.LogicalAnd(negative, cmp.Greater(x, _f(-0.5))), "not": lg.LogicalNot(negative),
        "select": lg.Select(negative, x, _f(9.0)), "bitwise_and": bw.BitwiseAnd(i, _i(6)),
        "bitwise_not": bw.BitwiseNot(i), "shift_left": bw.BitwiseLeftShift(i, _i(2)),
        "shift_right": bw.BitwiseRightShift(i, _i(1)), "convert": cv.Convert(x, destination_type=Type.f16),
        "convert_like": cv.ConvertLike(i, x),
    }


# Divide with m_pythondiv=true (floor) is left out: openvino's own reference floors, as vinerun does,
# but its CPU plugin truncates integer division at run time.
def test_ir_round_trip_matches_openvino(tmp_path):
    x, i = Parameter(Type.f32, [2, 8], name="x"), Parameter(Type.i32, [2, 8], name="i")
    outs = _outputs(x, i)
    results = []
    for name, node in outs.items():
        node.output(0).set_names({name})
        results.append(Result(node.output(0), name=name))
    model = Model(results, [x, i], "elementwise")
    ov.serialize(model, tmp_path / "m.xml")

    rng = np.random.default_rng(0)
    xv = rng.uniform(-2, 2, (2, 8)).astype(np.float32)
    xv[0, :3] = [0.5, -1.5, 2.5]  # ties for Round
    iv = rng.integers(-20, 20, (2, 8)).astype(np.int32)

    core = openvino.Core()
    compiled = core.compile_model(core.read_model(str(tmp_path / "m.xml")), "CPU",
                                  {"INFERENCE_PRECISION_HINT": "f32"})
    theirs = compiled([xv, iv])
    ours = ov.Core().compile_model(model, "CPU").create_infer_request().infer([xv, iv]).to_tuple()
    for k, name in enumerate(outs):
        want, got = theirs[compiled.output(name)], ours[k]
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-4,
                                   err_msg=name)
