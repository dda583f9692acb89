"""One-step LSTM sequences as cells: an ``LSTMSequence`` of static length 1 becomes an ``LSTMCell``.

Streaming models call their recurrent layer one frame at a time (silero-vad's main model: an ONNX LSTM over a
sequence of 1); as a sequence op it runs ATen's LSTM (~200 us there), as a cell one oneDNN primitive that
joins a native segment (~10 us). Matched: one direction, the default activations, no clip, constant weights
and sequence lengths (all 1); the states' direction axis and Y's sequence axis become Squeeze/Unsqueeze views.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ops.reshape import Squeeze, Unsqueeze
from vinerun.ops.rnn_cells import LSTMCell
from vinerun.transformations.pass_infra import InPlacePass, PassResult

_DEFAULT = ["sigmoid", "tanh", "tanh"]


def single_step(node: Node) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(W, R, B) of one direction when ``node`` is a one-step LSTMSequence this pass takes, else None."""
    if node.type_name != "LSTMSequence" or node.direction not in ("forward", "reverse") or node.clip:
        return None
    if node.activations and [a.lower() for a in node.activations] != _DEFAULT:
        return None
    x = node.get_input_partial_shape(0)
    if not x.is_static or x.to_shape()[1] != 1:
        return None
    lengths = node.const_input(3)
    weights = [node.const_input(i) for i in (4, 5, 6)]
    if lengths is None or np.any(np.asarray(lengths) != 1) or any(w is None or w.shape[0] != 1 for w in weights):
        return None
    w, r, b = (np.asarray(a[0]) for a in weights)
    return w, r, b


class LSTMSequenceToCell(InPlacePass):
    """Replace each one-step LSTMSequence with Squeeze -> LSTMCell -> Unsqueeze.

    >>> LSTMSequenceToCell()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = single_step(node)
            if found is None:
                continue
            w, r, b = found
            axis = Constant(np.array([1], np.int64))
            x, h, c = (Squeeze(node.input_value(i), axis) for i in (0, 1, 2))
            cell = LSTMCell(x, h, c, Constant(w), Constant(r), Constant(b), hidden_size=node.hidden_size,
                            name=node.friendly_name)
            replace_output_update_name(node.output(0), Unsqueeze(cell.output(0), Constant(np.array([1, 2]))).output(0))
            replace_output_update_name(node.output(1), Unsqueeze(cell.output(0), axis).output(0))
            replace_output_update_name(node.output(2), Unsqueeze(cell.output(1), axis).output(0))
            node.detach()
            modified = True
        return PassResult(model, modified)
