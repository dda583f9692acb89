"""Reference execution of a Model with each node's NumPy ``evaluate``.

This is the oracle and the constant folder, never the fast path. Control-flow ops run their
bodies through :func:`run_body`, which a device may redirect (a context variable) to its own
compiled executor while it runs.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Sequence
from typing import Any

from vinerun.errors import InferenceError, VinerunError
from vinerun.ir.core_ops import Parameter
from vinerun.ir.model import Model
from vinerun.ir.node import Node

BodyRunner = Callable[[Model, Sequence[Any]], list[Any]]


def evaluate_node(node: Node, inputs: list[Any]) -> list[Any]:
    """Run one node's reference, re-raising failures with the node named (type kept)."""
    try:
        return node.evaluate(inputs)
    except VinerunError as e:
        if f"'{node.friendly_name}'" in str(e):
            raise
        raise type(e)(f"{node.type_name} '{node.friendly_name}': {e}") from e
    except Exception as e:  # noqa: BLE001 - any kernel failure is reported with the node's name
        raise InferenceError(f"{node.type_name} '{node.friendly_name}' failed: {type(e).__name__}: {e}") from e


def run_reference(model: Model, inputs: Sequence[Any], state: dict[str, Any] | None = None) -> list[Any]:
    """Evaluate ``model`` on ``inputs`` (one array per Parameter, in order); returns result arrays."""
    values: dict[tuple[int, int], Any] = {}
    params = model.get_parameters()
    if len(inputs) != len(params):
        raise InferenceError(f"Model '{model.friendly_name}' takes {len(params)} inputs, got {len(inputs)}")
    for p, v in zip(params, inputs, strict=True):
        values[(id(p), 0)] = v
    token = _STATE.set(state if state is not None else {})
    try:
        for node in model.get_ordered_ops():
            if isinstance(node, Parameter):
                continue
            args = [None if o is None else values[(id(o.node), o.index)] for o in node._inputs]
            outs = evaluate_node(node, args)
            for i, v in enumerate(outs):
                values[(id(node), i)] = v
    finally:
        _STATE.reset(token)
    return [values[(id(r), 0)] for r in model.get_results()]


_RUNNER: contextvars.ContextVar[BodyRunner] = contextvars.ContextVar("vinerun_body_runner", default=run_reference)
# variable values used outside any state_scope (one dict shared by all such callers)
_UNSCOPED_STATE: dict[str, Any] = {}
_STATE: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("vinerun_state")


def run_body(model: Model, inputs: Sequence[Any]) -> list[Any]:
    """Run a control-flow body with the executor of the device currently running."""
    return _RUNNER.get()(model, inputs)


class _Scoped:
    """A context variable set for a block (a class, not a generator: entered twice per inference)."""

    __slots__ = ("_var", "_value", "_token")

    def __init__(self, var: contextvars.ContextVar[Any], value: Any):
        self._var, self._value = var, value

    def __enter__(self) -> None:
        self._token = self._var.set(self._value)

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._token)


def body_runner(runner: BodyRunner) -> contextlib.AbstractContextManager[None]:
    """Within this block, :func:`run_body` uses ``runner``."""
    return _Scoped(_RUNNER, runner)


def current_state() -> dict[str, Any]:
    """Variable values (ReadValue/Assign) of the request being executed."""
    return _STATE.get(_UNSCOPED_STATE)


def state_scope(state: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
    """Within this block, ReadValue/Assign read and write ``state``."""
    return _Scoped(_STATE, state)
