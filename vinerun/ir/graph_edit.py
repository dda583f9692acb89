"""Graph editing helpers used by passes and frontends."""

from __future__ import annotations

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Result
from vinerun.ir.node import Node, Output


def replace_node(old: Node, new: Node | list[Output]) -> None:
    """Make every consumer of ``old``'s outputs read the matching output of ``new``.

    Tensor names move to the replacement so model inputs/outputs keep their names.
    """
    new_outputs = new.outputs() if isinstance(new, Node) else list(new)
    if len(new_outputs) != old.get_output_size():
        raise ValidationError(f"Cannot replace {old.type_name} '{old.friendly_name}' ({old.get_output_size()} outputs) "
                              f"with {len(new_outputs)} outputs")
    for old_out, new_out in zip(old.outputs(), new_outputs, strict=True):
        replace_output_update_name(old_out, new_out)


def replace_output_update_name(old: Output, new: Output) -> None:
    """Redirect consumers of ``old`` to ``new`` and give ``new`` the tensor names of ``old``."""
    names = old.get_names()
    old.replace(new)
    if names and not isinstance(new.node, Result):
        new.add_names(names)
