"""FoldConstantIf (transformations/if_folding.py): an If on a Constant condition becomes its taken branch, also
when the condition settles only once shapes are static (ShapeOf -> Equal), nested Ifs included; stateful branches
and data-dependent conditions are left alone."""

from __future__ import annotations

import numpy as np

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu, Sigmoid
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.comparison import Equal
from vinerun.ops.control_flow import BodyOutputDescription, If, InvariantInputDescription
from vinerun.ops.gather import Gather
from vinerun.ops.shape_of import ShapeOf
from vinerun.transformations import common_cleanup
from vinerun.transformations.if_folding import FoldConstantIf

RNG = np.random.default_rng(3)


def branch(act, dims=(-1, 4)):
    p = Parameter(Type.f32, list(dims))
    return Model([act(Add(p, Constant(np.float32(1.0))))], [p])


def if_on(cond, x, then_body, else_body):
    ins = (InvariantInputDescription(1, 0),)
    outs = (BodyOutputDescription(0, 0),)
    return If(cond, x, then_body=then_body, else_body=else_body, then_inputs=ins, else_inputs=ins,
              then_outputs=outs, else_outputs=outs)


def rank_check_model(dims):
    """``if x.shape[1] == 4: sigmoid(x + 1) else: relu(x + 1)``, twice nested in the taken branch's reader."""
    x = Parameter(Type.f32, list(dims))
    cond = Equal(Gather(ShapeOf(x), Constant(np.int64(1)), Constant(np.int64(0))), Constant(np.int64(4)))
    first = if_on(cond, x, branch(Sigmoid), branch(Relu))
    inner_x = Parameter(Type.f32, [-1, 4])
    inner_cond = Equal(Gather(ShapeOf(inner_x), Constant(np.int64(1)), Constant(np.int64(0))),
                       Constant(np.int64(4)))
    nested = Model([if_on(inner_cond, inner_x, branch(Sigmoid), branch(Relu)).output(0)], [inner_x])
    second = if_on(cond, first.output(0), nested, branch(Relu))
    return Model([Multiply(second.output(0), Constant(np.float32(2.0)))], [x])


def types(model):
    return [n.type_name for n in model.get_ordered_ops()]


def test_static_shapes_settle_the_conditions_and_every_if_goes():
    model = rank_check_model([3, 4])
    data = RNG.standard_normal((3, 4)).astype(np.float32)
    want = run_reference(model, [data])[0]
    assert FoldConstantIf()(model).modified is False  # ShapeOf not folded yet: conditions not constant
    common_cleanup()(model)  # folding, then If folding until nothing changes
    assert "If" not in types(model) and types(model).count("Sigmoid") == 2
    np.testing.assert_allclose(run_reference(model, [data])[0], want, rtol=1e-6)


def test_a_dynamic_shape_keeps_its_ifs():
    model = rank_check_model([-1, -1])
    common_cleanup()(model)
    assert types(model).count("If") == 2


def test_a_data_condition_is_left_alone():
    cond, x = Parameter(Type.boolean, []), Parameter(Type.f32, [2, 4])
    model = Model([if_on(cond, x, branch(Sigmoid, (2, 4)), branch(Relu, (2, 4))).output(0)], [cond, x])
    assert FoldConstantIf()(model).modified is False


def test_the_cpu_compiles_the_inlined_branch():
    model = rank_check_model([3, 4])
    data = RNG.standard_normal((3, 4)).astype(np.float32)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert "If" not in [s.node.type_name for s in compiled._impl.plan.steps]
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0],
                               rtol=1e-5, atol=1e-6)
