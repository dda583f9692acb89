"""``get_batch`` / ``set_batch``: the batch dimension of a model, found through its input layouts.

As in OpenVINO, the batch is the ``N`` dimension of every input whose layout names one
(``param.set_layout("NCHW")`` or ``PrePostProcessor``'s ``model().set_layout``); a model none of
whose inputs has a layout with ``N`` raises an error that lists the inputs and says what to set.
"""

from __future__ import annotations

from typing import Any

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter
from vinerun.ir.model import Model
from vinerun.ir.shape import Dimension, PartialShape


def _describe(p: Parameter, extra: str) -> str:
    names = sorted(p.output(0).get_names())
    return f"{names[0] if names else p.friendly_name!r}: shape {p.get_partial_shape()}, layout {p.layout}, {extra}"


def _batched(model: Model) -> list[tuple[Parameter, int]]:
    found = []
    for p in model.get_parameters():
        ps = p.get_partial_shape()
        if not p.layout.empty and p.layout.has_name("N") and ps.rank.is_static:
            found.append((p, p.layout.get_index_by_name("N") % len(ps)))
    if not found:
        listing = "; ".join(_describe(p, "no batch") for p in model.get_parameters())
        raise ValidationError(f"Model '{model.friendly_name}': no input has a layout with a batch dimension 'N' "
                              f"({listing}). Set one, e.g. model.input(0).node.set_layout(Layout('NCHW')), "
                              "or ppp.input().model().set_layout(...)")
    return found


def get_batch(model: Model) -> Dimension:
    """The batch size (``N``) shared by the model's inputs.

    >>> model.input(0).node.set_layout(Layout("NCHW"))
    >>> get_batch(model)
    <Dimension: 1>
    """
    found = _batched(model)
    batch = Dimension()
    for p, i in found:
        merged = batch.merge(p.get_partial_shape()[i])
        if merged is None:
            listing = "; ".join(_describe(q, f"batch {q.get_partial_shape()[j]}") for q, j in found)
            raise ValidationError(f"Model '{model.friendly_name}': inputs disagree on the batch size ({listing})")
        batch = merged
    return batch


def set_batch(model: Model, batch_size: Any = -1) -> None:
    """Set the ``N`` dimension of every input that has one (``-1``: dynamic) and re-infer shapes."""
    found = _batched(model)
    dim = batch_size if isinstance(batch_size, Dimension) else Dimension(int(batch_size))
    for p, i in found:
        dims = list(p.get_partial_shape())
        dims[i] = dim
        p.set_partial_shape(PartialShape(dims))
    try:
        model.validate_nodes_and_infer_types()
    except ValidationError as e:
        raise ValidationError(f"Model '{model.friendly_name}': cannot set batch {dim}: {e}") from e
