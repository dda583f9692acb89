"""LSTM and GRU cells decomposed into GNA primitives, as the Intel GNA plugin did before compiling them.

``LSTMCell`` (opset4, gates ``f, i, c, o``) and ``LSTMSequence`` with one time step become, per gate
``g``: an affine of ``X`` with the gate's bias plus an affine of ``H`` (added as a diagonal affine),
then the gate activation (sigmoid/tanh PWLs); the cell state is ``C' = f*C + i*c~`` (two eltwise
multiplies and an eltwise add) and ``H' = o * tanh(C')``. ``clip`` becomes a Clamp before each
activation. What carries the state between frames is up to the model: ReadValue/Assign around the
cell (the Kaldi style), which the exact path keeps as int16 memory. The identity PWLs that turn
32-bit sums into int16 (for the multiplies, the memory writes and the next affine) are inserted by
:class:`~vinerun.plugins.gna.exact.ExactBackend` like for any other layer.

``GRUCell`` (opset3, gates ``z, r, h``) becomes the ``z`` and ``r`` gates as above, the candidate
``h~ = tanh(X Wh^T + bh + (r*H) Rh^T)`` (or ``r * (H Rh^T + Rbh)`` with ``linear_before_reset``) and
``H' = z*(H - h~) + h~`` (an eltwise subtract, multiply and add).

Only the default activations (sigmoid, tanh, tanh; sigmoid, tanh for GRU) are decomposed; other
activations, more than one step or a bidirectional sequence raise ``NotSupportedError`` naming the layer.

>>> model = decompose_cells(speech_model(lstm=16))              # doctest: +SKIP
>>> "LSTMCell" in {n.type_name for n in model.get_ordered_ops()}  # doctest: +SKIP
False
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun import opset13 as ops
from vinerun.errors import NotSupportedError
from vinerun.ir.graph_edit import replace_node
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.plugin_api.variable_state import constant_value

CELLS = ("LSTMCell", "LSTMSequence", "GRUCell")
_GATES = "fico"  # OpenVINO's LSTM gate order in W, R and B
_DEFAULT = ["sigmoid", "tanh", "tanh"]
_GRU_DEFAULT = ["sigmoid", "tanh"]  # gates z, r, h


def _unsupported(node: Node, what: str) -> NotSupportedError:
    return NotSupportedError(f"GNA_SW_EXACT cannot decompose {node.type_name} '{node.friendly_name}': {what}")


def _weights(node: Node, index: int, what: str) -> np.ndarray:
    value = constant_value(node.input_value(index))
    if value is None:
        raise _unsupported(node, f"its {what} (input {index}) is not a constant")
    return np.asarray(value, np.float32)


def _gate(x: Any, h: Any, w: np.ndarray, r: np.ndarray, b: np.ndarray, clip: float, act: str, name: str) -> Any:
    """``act(clip(x W^T + b + h R^T))`` as two affines and a diagonal add."""
    zx = ops.add(ops.matmul(x, ops.constant(np.ascontiguousarray(w)), False, True, name=f"{name}/x_matmul"),
                 ops.constant(b.reshape(1, -1)), name=f"{name}/x_affine")
    z = ops.add(zx, ops.matmul(h, ops.constant(np.ascontiguousarray(r)), False, True, name=f"{name}/h_matmul"),
                name=f"{name}/sum")
    if clip > 0:
        z = ops.clamp(z, -clip, clip, name=f"{name}/clip")
    fn = ops.sigmoid if act == "sigmoid" else ops.tanh
    return fn(z, name=name)


def _check_activations(node: Node, default: list[str]) -> None:
    attrs = node.get_attributes()
    acts = list(attrs.get("activations") or default)
    if [a.lower() for a in acts] != default or attrs.get("activations_alpha") or attrs.get("activations_beta"):
        raise _unsupported(node, f"activations {acts} (only the default {', '.join(default)} are decomposed)")


def lstm_step(node: Node, x: Output, h: Output, c: Output, W: np.ndarray, R: np.ndarray,
              B: np.ndarray) -> tuple[Any, Any]:
    """The decomposed step: returns ``(H', C')``; ``W`` [4H, I], ``R`` [4H, H], ``B`` [4H]."""
    _check_activations(node, _DEFAULT)
    attrs = node.get_attributes()
    hidden, clip, name = int(attrs["hidden_size"]), float(attrs.get("clip") or 0.0), node.friendly_name
    part = {g: slice(k * hidden, (k + 1) * hidden) for k, g in enumerate(_GATES)}
    gate = {g: _gate(x, h, W[part[g]], R[part[g]], B[part[g]], clip, "tanh" if g == "c" else "sigmoid",
                     f"{name}/gate_{g}") for g in _GATES}
    c_new = ops.add(ops.multiply(gate["f"], c, name=f"{name}/f_mul_c"),
                    ops.multiply(gate["i"], gate["c"], name=f"{name}/i_mul_g"), name=f"{name}/cell")
    h_new = ops.multiply(gate["o"], ops.tanh(c_new, name=f"{name}/cell_tanh"), name=f"{name}/hidden")
    return h_new, c_new


def gru_step(node: Node, x: Output, h: Output, W: np.ndarray, R: np.ndarray, B: np.ndarray) -> Any:
    """The decomposed GRU step ``H' = z*(H - h~) + h~`` (= ``(1-z)*h~ + z*H``); gates ``z, r, h``."""
    _check_activations(node, _GRU_DEFAULT)
    attrs = node.get_attributes()
    hidden, clip, name = int(attrs["hidden_size"]), float(attrs.get("clip") or 0.0), node.friendly_name
    part = {g: slice(k * hidden, (k + 1) * hidden) for k, g in enumerate("zrh")}
    z, r = (_gate(x, h, W[part[g]], R[part[g]], B[part[g]], clip, "sigmoid", f"{name}/gate_{g}") for g in "zr")
    wh, rh, bh = (np.ascontiguousarray(v[part["h"]]) for v in (W, R, B))
    xh = ops.add(ops.matmul(x, ops.constant(wh), False, True, name=f"{name}/xh_matmul"),
                 ops.constant(bh.reshape(1, -1)), name=f"{name}/xh")
    if attrs.get("linear_before_reset"):
        hr = ops.add(ops.matmul(h, ops.constant(rh), False, True, name=f"{name}/hr_matmul"),
                     ops.constant(np.ascontiguousarray(B[3 * hidden:]).reshape(1, -1)), name=f"{name}/hr")
        recurrent = ops.multiply(r, hr, name=f"{name}/r_mul_hr")
    else:
        recurrent = ops.matmul(ops.multiply(r, h, name=f"{name}/r_mul_h"), ops.constant(rh), False, True,
                               name=f"{name}/rh_matmul")
    pre = ops.add(xh, recurrent, name=f"{name}/sum_h")
    if clip > 0:
        pre = ops.clamp(pre, -clip, clip, name=f"{name}/clip_h")
    cand = ops.tanh(pre, name=f"{name}/gate_h")
    keep = ops.multiply(z, ops.subtract(h, cand, name=f"{name}/h_minus_cand"), name=f"{name}/z_mul")
    return ops.add(keep, cand, name=f"{name}/hidden")


def _decompose_gru(node: Node) -> None:
    W, R = _weights(node, 2, "W"), _weights(node, 3, "R")
    hidden = int(node.get_attributes()["hidden_size"])
    lbr = bool(node.get_attributes().get("linear_before_reset"))
    B = _weights(node, 4, "B") if node.get_input_size() > 4 else np.zeros((4 if lbr else 3) * hidden, np.float32)
    replace_node(node, [gru_step(node, node.input_value(0), node.input_value(1), W, R, B).output(0)])


def _decompose_cell(node: Node) -> None:
    W, R = _weights(node, 3, "W"), _weights(node, 4, "R")
    hidden = int(node.get_attributes()["hidden_size"])
    B = _weights(node, 5, "B") if node.get_input_size() > 5 else np.zeros(4 * hidden, np.float32)
    h_new, c_new = lstm_step(node, node.input_value(0), node.input_value(1), node.input_value(2), W, R, B)
    replace_node(node, [h_new.output(0), c_new.output(0)])


def _decompose_sequence(node: Node) -> None:
    attrs = node.get_attributes()
    x_shape = list(node.get_input_partial_shape(0).to_shape())  # [batch, seq, input]
    if x_shape[1] != 1:
        raise _unsupported(node, f"sequence length {x_shape[1]} (GNA runs one frame per inference: 1)")
    if str(attrs.get("direction", "forward")).lower() == "bidirectional":
        raise _unsupported(node, "direction bidirectional")
    batch, hidden = x_shape[0], int(attrs["hidden_size"])
    W, R, B = (_weights(node, i, n)[0] for i, n in ((4, "W"), (5, "R"), (6, "B")))

    def flat(value: Output, width: int) -> Any:
        return ops.reshape(value, ops.constant(np.array([batch, width], np.int64)), False)

    h_new, c_new = lstm_step(node, flat(node.input_value(0), x_shape[2]), flat(node.input_value(1), hidden),
                             flat(node.input_value(2), hidden), W, R, B)

    def shaped(value: Any, shape: list[int]) -> Output:
        return ops.reshape(value, ops.constant(np.array(shape, np.int64)), False).output(0)

    replace_node(node, [shaped(h_new, [batch, 1, 1, hidden]), shaped(h_new, [batch, 1, hidden]),
                        shaped(c_new, [batch, 1, hidden])])


def decompose_cells(model: Model) -> Model:
    """A copy of ``model`` with every LSTMCell / one-step LSTMSequence replaced by GNA primitives
    (the model itself when it has none)."""
    if not any(n.type_name in CELLS for n in model.get_ordered_ops()):
        return model
    model = model.clone()
    for node in list(model.get_ordered_ops()):
        if node.type_name == "LSTMCell":
            _decompose_cell(node)
        elif node.type_name == "LSTMSequence":
            _decompose_sequence(node)
        elif node.type_name == "GRUCell":
            _decompose_gru(node)
    return model
