"""Whether a model can be batched in dimension 0, and its batched copy.

Batched: a stateless model whose every input and output has a static shape with dimension 0 of
size 1 (where a Layout is given, its ``N`` must be that dimension 0), and whose copy reshaped to
batch N still type-checks with every output ``[N, ...]`` of the same other dimensions. Batching
assumes batch items do not mix (as OpenVINO's auto-batching does).

>>> batched, reason = batched_model(model, 8)
>>> reason or [list(o.get_shape()) for o in batched.outputs]
[[8, 1000]]
"""

from __future__ import annotations

from vinerun.errors import VinerunError
from vinerun.ir.layout import Layout
from vinerun.ir.model import Model
from vinerun.ir.node import Output


def _port_name(port: Output) -> str:
    try:
        return port.get_any_name()
    except (VinerunError, RuntimeError):
        return port.node.friendly_name


def _why_not_port(port: Output, what: str, layout: Layout | None) -> str:
    name = f"{what} '{_port_name(port)}'"
    shape = port.get_partial_shape()
    if shape.is_dynamic:
        return f"{name} has a dynamic shape {shape}"
    if len(shape) == 0:
        return f"{name} is a scalar (no batch dimension)"
    if layout is not None and not layout.empty:
        if not layout.has_name("N"):
            return f"{name} has layout {layout.to_string()} without a batch dimension N"
        index = layout.get_index_by_name("N")
        if index not in (0, -len(shape)):
            return f"{name} has layout {layout.to_string()}: its batch dimension N is not dimension 0"
    if shape[0].get_length() != 1:
        return f"{name} has shape {shape}: batch dimension 0 is {shape[0].get_length()}, not 1"
    return ""


def why_not_batchable(model: Model) -> str:
    """Why ``model`` cannot be batched in dimension 0, or ``""`` if it can (shapes and layouts only)."""
    if model.get_variables():
        return "the model is stateful (its variables keep state per request)"
    for p in model.get_parameters():
        reason = _why_not_port(p.output(0), "input", p.get_layout())
        if reason:
            return reason
    for out in model.outputs:
        reason = _why_not_port(out, "output", None)
        if reason:
            return reason
    return ""


def batched_model(model: Model, size: int) -> tuple[Model | None, str]:
    """``(copy of model with batch `size`, "")``, or ``(None, reason)`` when it cannot be batched."""
    reason = why_not_batchable(model)
    if reason:
        return None, reason
    batched = model.clone()
    shapes = {i: [size, *list(p.get_partial_shape().to_shape())[1:]] for i, p in enumerate(model.get_parameters())}
    try:
        batched.reshape(shapes)
    except (VinerunError, ValueError, RuntimeError) as e:
        return None, f"reshaping the model to batch {size} failed: {e}"
    for before, after in zip(model.outputs, batched.outputs, strict=True):
        want = [size, *list(before.get_shape())[1:]]
        got = after.get_partial_shape()
        if got.is_dynamic or list(got.to_shape()) != want:
            return None, (f"output '{_port_name(before)}' does not scale with the batch: {got} at batch {size}, "
                          f"expected {want}")
    return batched, ""
