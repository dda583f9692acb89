"""If folding: an ``If`` whose condition is a Constant becomes the branch it takes, inlined into the graph.

Exporters that trace shape checks (TorchScript's ``if x.dim() == 3``, silero-vad's main model nests a dozen of
them) leave Ifs on ``ShapeOf -> Gather -> Equal``; once the input shapes are static (a reshaped model, a plan
specialized to a call's shapes) constant folding settles those conditions. The taken branch is cloned, its
Parameters read the If's inputs, the If's outputs become the branch's results, and folding runs again (the
inlined branch may settle the next condition), as OpenVINO's constant folding does for If. Branches holding
variable state (ReadValue/Assign) are left alone.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.transformations.constant_folding import ConstantFolding
from vinerun.transformations.pass_infra import InPlacePass, PassResult

_STATEFUL = ("ReadValue", "Assign")


def taken_branch(node: Node) -> tuple[Model, tuple, tuple] | None:
    """(body, input descriptions, output descriptions) of the branch a constant-condition If takes, else None."""
    if node.type_name != "If":
        return None
    cond = node.const_input(0)
    if cond is None or np.size(cond) != 1:
        return None
    taken = bool(np.asarray(cond).reshape(-1)[0])
    body = node.then_body if taken else node.else_body
    if any(n.type_name in _STATEFUL for n in body.get_ordered_ops()):
        return None
    return (body, node.then_inputs, node.then_outputs) if taken else (body, node.else_inputs, node.else_outputs)


def inline_branch(node: Node, body: Model, inputs: tuple, outputs: tuple) -> None:
    """Replace ``node`` by a clone of ``body`` wired to its inputs and outputs."""
    body = body.clone()
    params, results = body.get_parameters(), body.get_results()
    for d in inputs:
        params[d.body_parameter_index].output(0).replace(node.input_value(d.input_index))
    for d in outputs:
        replace_output_update_name(node.output(d.output_index), results[d.body_value_index].input_value(0))
    node.detach()


class FoldConstantIf(InPlacePass):
    """Inline every If whose condition is a Constant (repeatedly: see the module docstring).

    >>> FoldConstantIf()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        while True:
            found = [(n, b) for n in model.get_ordered_ops() if (b := taken_branch(n)) is not None]
            if not found:
                return PassResult(model, modified)
            for node, (body, inputs, outputs) in found:
                inline_branch(node, body, inputs, outputs)
            modified = True
            model.validate_nodes_and_infer_types()  # the inlined nodes now read the outer (narrower) values
            ConstantFolding()(model)
