"""SharedOpOptimization: nodes that compute the same thing (same op, equal attributes, the same inputs or equal
Constants) become one, chains of copies included; different attributes or constant values, big constants that are
not one node, random ops, state and model outputs stay as they were; the model computes what it computed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ir.types import Type
from vinerun.op.util import Variable, VariableInfo
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.broadcast import Broadcast
from vinerun.ops.concat_split import Concat
from vinerun.ops.control_flow import BodyOutputDescription, If, InvariantInputDescription
from vinerun.ops.convert import Convert
from vinerun.ops.logical import Select
from vinerun.ops.matmul import MatMul
from vinerun.ops.random import RandomUniform, RandomUniformLike
from vinerun.transformations.shared_ops import MAX_COMPARED_BYTES, SharedOpOptimization

RNG = np.random.default_rng(11)
BERT = Path("/tmp/zoo/bert_hf_sdpa.onnx")


def f32(value) -> Constant:
    return Constant(np.asarray(value, np.float32))


def ints(*values: int) -> Constant:
    return Constant(np.array(values, np.int64))


def count(model: Model, type_name: str) -> int:
    return sum(n.type_name == type_name for n in model.get_ordered_ops())


def sum_of(outputs: list[Node | Output]) -> Node:
    total = outputs[0]
    for out in outputs[1:]:
        total = Add(total, out)
    return total


def merged(model: Model, inputs: list[np.ndarray]) -> bool:
    """Run the pass; the model must compute what it did before, and a second run must find nothing."""
    want = run_reference(model, inputs)
    modified = SharedOpOptimization()(model).modified
    for got, w in zip(run_reference(model, inputs), want, strict=True):
        np.testing.assert_array_equal(got, w)
    assert not SharedOpOptimization()(model).modified
    return modified


def test_bert_mask_where_per_layer_becomes_one_node():
    """Every layer's ``Where(mask, 0, -inf)`` with its own equal scalar Constants, and a Broadcast copied in each:
    one Broadcast and one Select are left, read by every layer; the first keeps its friendly name."""
    x = Parameter(Type.f32, [1, 1, 4, 4], name="x")
    mask = Parameter(Type.boolean, [1, 1, 1, 4], name="mask")
    layers = []
    for i in range(6):
        cond = Broadcast(mask, ints(1, 1, 4, 4), name=f"expand.{i}")
        scores = Multiply(x, f32(float(i + 1)))  # each layer's own
        layers.append(Add(scores, Select(cond, f32([0.0]), f32([-1e4]), name=f"layer.{i}.where")))
    model = Model([sum_of(layers)], [x, mask])
    inputs = [RNG.standard_normal([1, 1, 4, 4]).astype(np.float32), RNG.random([1, 1, 1, 4]) < 0.5]
    assert merged(model, inputs)
    assert count(model, "Broadcast") == count(model, "Select") == 1
    select = next(n for n in model.get_ordered_ops() if n.type_name == "Select")
    assert select.friendly_name == "layer.0.where"
    assert len(select.output(0).get_target_inputs()) == 6


def test_duplicates_merge_and_pass_their_tensor_names_on():
    x = Parameter(Type.f32, [2, 3])
    a, b = Relu(x), Relu(x)
    a.output(0).set_names({"a"})
    b.output(0).set_names({"b"})
    model = Model([Multiply(a, b)], [x])
    assert merged(model, [RNG.standard_normal([2, 3]).astype(np.float32)])
    (relu,) = [n for n in model.get_ordered_ops() if n.type_name == "Relu"]
    assert relu.output(0).get_names() == {"a", "b"}


@pytest.mark.parametrize(("left", "right"), [
    (lambda x: Add(x, f32(1.0)), lambda x: Add(x, f32(2.0))),  # another constant value
    (lambda x: Add(x, f32(1.0)), lambda x: Add(f32(1.0), x)),  # the inputs in another order
    (lambda x: Concat([x, x], axis=0), lambda x: Concat([x, x], axis=1)),  # another attribute
    (lambda x: Convert(x, destination_type=Type.f16), lambda x: Convert(x, destination_type=Type.f64)),
    (lambda x: Add(x, f32(0.0)), lambda x: Add(x, f32(-0.0))),  # equal numbers, other bytes
    (lambda x: Add(x, f32([1.0, 1.0, 1.0])), lambda x: Add(x, f32([[1.0, 1.0, 1.0]]))),  # another shape
])
def test_different_computations_stay(left, right):
    x = Parameter(Type.f32, [2, 3])
    model = Model([Convert(left(x), destination_type=Type.f32), Convert(right(x), destination_type=Type.f32)], [x])
    before = len(model.get_ordered_ops())
    assert not merged(model, [RNG.standard_normal([2, 3]).astype(np.float32)])
    assert len(model.get_ordered_ops()) == before


def test_big_constants_count_as_one_input_only_when_they_are_one_node():
    n = int(np.sqrt(MAX_COMPARED_BYTES / 4)) + 8  # an n x n f32 weight is over the compared size
    weight = RNG.standard_normal([n, n]).astype(np.float32)
    x = Parameter(Type.f32, [1, n])
    shared = f32(weight)
    model = Model([Add(MatMul(x, shared), MatMul(x, shared)), Add(MatMul(x, f32(weight)), MatMul(x, f32(weight)))],
                  [x])
    assert merged(model, [RNG.standard_normal([1, n]).astype(np.float32)])
    assert count(model, "MatMul") == 3  # the two readers of one Constant merged; the copies of the weight did not


def test_random_ops_and_state_stay():
    x = Parameter(Type.f32, [2, 3], name="x")
    draws = [RandomUniformLike(x, seed=1.0, low=0.0, high=1.0) for _ in range(2)]
    uniform = [RandomUniform(ints(2, 3), f32(0.0), f32(1.0), global_seed=1, op_seed=2) for _ in range(2)]
    var = Variable(VariableInfo([2, 3], Type.f32, "acc"))
    reads = [ops.read_value(var) for _ in range(2)]
    total = sum_of([*draws, *uniform, *[r.output(0) for r in reads], x])
    model = Model([Result(total)], [x], sinks=[ops.assign(total, var)])
    assert not SharedOpOptimization()(model).modified
    assert count(model, "RandomUniformLike") == count(model, "RandomUniform") == count(model, "ReadValue") == 2


def test_ops_with_a_body_stay():
    def body() -> Model:
        p = Parameter(Type.f32, [2, 3])
        return Model([Relu(p)], [p])

    x, cond = Parameter(Type.f32, [2, 3]), Parameter(Type.boolean, [])
    ins, outs = (InvariantInputDescription(1, 0),), (BodyOutputDescription(0, 0),)
    ifs = [If(cond, x, then_body=body(), else_body=body(), then_inputs=ins, else_inputs=ins, then_outputs=outs,
              else_outputs=outs) for _ in range(2)]
    model = Model([Add(*ifs)], [cond, x])
    assert not merged(model, [np.array(True), RNG.standard_normal([2, 3]).astype(np.float32)])
    assert count(model, "If") == 2


def test_model_outputs_keep_their_nodes_and_names():
    """Copies that are model outputs stay; one of them is kept for the others, without their tensor names."""
    x = Parameter(Type.f32, [2, 3], name="x")
    first, second, third = Relu(x), Relu(x), Relu(x)
    first.output(0).set_names({"y"})
    second.output(0).set_names({"z"})
    third.output(0).set_names({"inner"})
    model = Model([first, second, Multiply(third, f32(2.0))], [x])
    assert merged(model, [RNG.standard_normal([2, 3]).astype(np.float32)])
    assert count(model, "Relu") == 2  # the third went into a model output's
    assert model.output(0).get_names() == {"y"} and model.output(1).get_names() == {"z"}


def test_compiled_results_are_unchanged():
    """The same model on the CPU device, with and without the pass: the same numbers."""
    x = Parameter(Type.f32, [4, 8], name="x")
    model = Model([sum_of([Multiply(Relu(Add(x, f32(1.5))), f32(3.0)) for _ in range(4)])], [x])
    data = RNG.standard_normal([4, 8]).astype(np.float32)
    core = ov.Core()
    want = core.compile_model(model.clone(), "CPU")(data)[0]
    assert SharedOpOptimization()(model).modified
    assert count(model, "Relu") == count(model, "Multiply") == 1
    np.testing.assert_array_equal(core.compile_model(model, "CPU")(data)[0], want)


@pytest.mark.skipif(not BERT.exists(), reason="needs the zoo's transformers BERT export")
def test_bert_gpu_plan_computes_the_mask_once():
    from vinerun.plugins.gpu import backend

    with backend.stand_in():
        core = ov.Core()
        model = core.read_model(BERT)
        model.reshape({p.get_friendly_name(): [1, 128] for p in model.get_parameters()})
        compiled = core.compile_model(model, "GPU")
        steps = [s.node.type_name for s in compiled._impl.plan.steps]
    assert steps.count("FusedAttention") == 6
    assert steps.count("Select") == 1
