"""LowLatency2: a TensorIterator / Loop over time becomes a stateful single-step model.

As OpenVINO's ``LowLatency2``: every loop-carried value (a ``MergedInputDescription``, the back
edge from a body Result to a body Parameter) becomes a variable. The op's initial value is
replaced by ``ReadValue(init, variable)`` (``init`` a zero Constant with
``use_const_initializer=True``, the original initializing subgraph otherwise), the body result of
the back edge is exposed as an output of the op (its value at the last iteration) and stored by
an ``Assign`` that becomes a sink of the model. Each inference then continues where the previous
one stopped; ``reset_state()`` starts a new sequence.

To make one inference one time step, as in OpenVINO: a Loop with a Constant trip count gets a
trip count of 1 (a Loop whose trip count is not a Constant is left alone, with a log line), and a
TensorIterator whose sliced input comes straight from a model Parameter and covers its whole axis
gets that Parameter's axis reshaped to one part. Otherwise the sequence length stays what the
model says, and every inference processes one chunk of that many steps. A Loop's iteration
counter starts again at 0 on each inference.
"""

from __future__ import annotations

import logging

import numpy as np

from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ir.shape import PartialShape
from vinerun.ops.control_flow import BodyOutputDescription, MergedInputDescription, SliceInputDescription
from vinerun.ops.loop import Loop, TensorIterator
from vinerun.ops.state import Assign, ReadValue, Variable, VariableInfo
from vinerun.transformations.pass_infra import InPlacePass, PassResult

logger = logging.getLogger(__name__)


def _initializer(init: Output, use_const_initializer: bool) -> Output:
    if use_const_initializer and init.partial_shape.is_static and init.element_type.is_static():
        zeros = np.zeros([int(d) for d in init.get_shape()], init.element_type.to_dtype())
        return Constant(zeros, name=f"{init.node.friendly_name}/zero_init").output(0)
    return init


def _single_step(op: Node, model: Model) -> None:
    """Make ``op`` run one iteration per inference where the model allows it."""
    if isinstance(op, Loop):
        trip = op.input_value(0).node
        if not isinstance(trip, Constant) or int(np.asarray(trip.get_value()).reshape(-1)[0]) <= 0:
            logger.warning("LowLatency2: Loop '%s' has no constant trip count; it keeps its iteration count",
                           op.friendly_name)
            return
        op.set_argument(0, Constant(np.ones_like(trip.get_value())).output(0))
    for d in op.input_descriptions:
        if not isinstance(d, SliceInputDescription):
            continue
        src = op.input_value(d.input_index)
        whole_axis = (d.start, d.end) in ((0, -1), (-1, 0))
        if not isinstance(src.node, Parameter) or not whole_axis or src.partial_shape.rank.is_dynamic:
            continue
        dims = list(src.partial_shape)
        axis = d.axis if d.axis >= 0 else d.axis + len(dims)
        if dims[axis].is_static and dims[axis].get_length() != d.part_size:
            dims[axis] = d.part_size
            src.node.set_partial_shape(PartialShape(dims))


def _make_stateful(op: Node, model: Model, use_const_initializer: bool) -> Node:
    """Rebuild ``op`` with a ReadValue per loop-carried input and an output + Assign per back edge."""
    inputs = op.input_values()
    outputs = list(op.output_descriptions)
    n_out = op.get_output_size()
    params = op.body.get_parameters()
    assigns: list[tuple[int, Variable]] = []
    for k, d in enumerate(op.input_descriptions):
        if not isinstance(d, MergedInputDescription):
            continue
        init = inputs[d.input_index]
        var_id = f"{op.friendly_name}/{params[d.body_parameter_index].friendly_name}/variable_{k}"
        var = Variable(VariableInfo(init.partial_shape, init.element_type, var_id))
        inputs[d.input_index] = ReadValue(_initializer(init, use_const_initializer), variable=var,
                                          name=f"{var_id}/read").output(0)
        existing = next((o.output_index for o in outputs if isinstance(o, BodyOutputDescription)
                         and o.body_value_index == d.body_value_index and o.iteration == -1), None)
        if existing is None:
            existing = n_out
            outputs.append(BodyOutputDescription(d.body_value_index, n_out, -1))
            n_out += 1
        assigns.append((existing, var))
    attrs = dict(op._attrs, output_descriptions=tuple(outputs))
    new = type(op)(*inputs, name=op._friendly_name, **attrs)
    new.rt_info = dict(op.rt_info)
    for i in range(op.get_output_size()):
        replace_output_update_name(op.output(i), new.output(i))
    op.detach()
    for index, var in assigns:
        model.add_variables([var])
        model.add_sinks([Assign(new.output(index), variable=var, name=f"{var.info.variable_id}/assign")])
    return new


class LowLatency2(InPlacePass):
    """Turn every top-level TensorIterator / Loop into a stateful single-step computation.

    >>> LowLatency2()(model)                       # doctest: +SKIP
    >>> request = core.compile_model(model, "CPU").create_infer_request()
    >>> for x_t in steps: request.infer({"x": x_t})   # state carries h_t between calls
    """

    def __init__(self, use_const_initializer: bool = True):
        self.use_const_initializer = use_const_initializer

    def call(self, model: Model) -> PassResult:
        before = {v.get_variable_id() for v in model.get_variables()}
        modified = False
        for op in model.get_ordered_ops():
            if not isinstance(op, (TensorIterator, Loop)):
                continue
            if not any(isinstance(d, MergedInputDescription) for d in op.input_descriptions):
                continue
            _single_step(_make_stateful(op, model, self.use_const_initializer), model)
            modified = True
        if modified:
            model.validate_nodes_and_infer_types()
        self._created = {v.get_variable_id() for v in model.get_variables()} - before
        return PassResult(model, modified)

    def ensures(self, model: Model) -> None:
        readers = {n.get_variable_id() for n in model.get_ordered_ops() if isinstance(n, ReadValue)}
        writers = {s.get_variable_id() for s in model.get_sinks() if isinstance(s, Assign)}
        missing = sorted(v for v in getattr(self, "_created", ()) if v not in readers or v not in writers)
        if missing:
            raise AssertionError(f"variables {missing} lack a ReadValue or an Assign listed as a model sink")
