"""No-op nodes out of the graph: a ``Convert`` to the element type its input already has.

Exporters write casts that do nothing once the model runs in one precision (transformers' eager attention casts
the softmax to the value's type, ``attn_weights.to(value.dtype)``). The CPU runs such a Convert as a view, but
in the graph it still stands between the ops a fusion matches (a Softmax and its MatMul). Its readers are
given its input instead; its tensor names move to that input.
"""

from __future__ import annotations

from vinerun.ir.core_ops import Parameter
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.transformations.pass_infra import InPlacePass, PassResult


class IdentityConvertElimination(InPlacePass):
    """Remove each Convert whose destination type is its input's type.

    >>> IdentityConvertElimination()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if node.type_name != "Convert" or not node.output(0).get_target_inputs():
                continue
            source = node.input_value(0)
            if source.element_type != node.get_output_element_type(0) or not source.element_type.is_static():
                continue
            if isinstance(source.node, Parameter) and node.output(0).get_names():
                continue  # keep a model input's and a named tensor's names apart
            replace_output_update_name(node.output(0), source)
            node.detach()
            modified = True
        return PassResult(model, modified)
