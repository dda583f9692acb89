"""Which device runs each node: manual ``rt_info["affinity"]``, else the first device (in priority
order) whose ``query_model`` lists the node.

Parameters, Constants and Results carry no work: they get no affinity of their own here (the
partition copies Constants into each subgraph that reads them, Parameters feed whichever subgraph
reads them). A ReadValue and the Assign of the same variable must share a device (the variable
lives in one device's request); the Assign follows its ReadValue.

>>> affinities = assign_affinities(model, ["GNA", "CPU"], lambda dev: core.query_model(model, dev))
>>> affinities[node]
'GNA'
"""

from __future__ import annotations

from collections.abc import Callable

from vinerun.errors import NotSupportedError
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.node import Node

AFFINITY = "affinity"
FREE_TYPES = (Parameter, Constant, Result)


def is_free(node: Node) -> bool:
    """A node that does no work of its own (Parameter, Constant, Result)."""
    return isinstance(node, FREE_TYPES)


def manual_affinity(node: Node) -> str | None:
    """The device a user pinned the node to with ``rt_info["affinity"]`` (a string), if any."""
    value = node.rt_info.get(AFFINITY) if node.rt_info else None
    if value is None:
        return None
    text = str(getattr(value, "value", value)).strip()
    return text or None


def assign_affinities(nodes: list[Node], devices: list[str],
                      query: Callable[[str], dict[str, str]]) -> dict[Node, str]:
    """``{node: device}`` for every node that does work; raises naming the nodes no device supports."""
    work = [n for n in nodes if not is_free(n)]
    out: dict[Node, str] = {}
    pending = []
    for n in work:
        pinned = manual_affinity(n)
        if pinned is not None:
            out[n] = pinned
        else:
            pending.append(n)
    for device in devices:
        if not pending:
            break
        supported = query(device)
        still = []
        for n in pending:
            if n.friendly_name in supported:
                out[n] = device
            else:
                still.append(n)
        pending = still
    if pending:
        names = ", ".join(f"{n.friendly_name} ({n.type_name})" for n in pending[:10])
        more = f" and {len(pending) - 10} more" if len(pending) > 10 else ""
        raise NotSupportedError(f"HETERO: no device of {','.join(devices)} supports node(s) {names}{more}; "
                                "add a device that does (e.g. CPU) to the list")
    _pair_variables(work, out)
    return out


def _pair_variables(nodes: list[Node], affinity: dict[Node, str]) -> None:
    """Put each Assign on its ReadValue's device (a variable's state lives in one device's request)."""
    readers = {n.get_variable_id(): n for n in nodes if n.type_name == "ReadValue"}
    for n in nodes:
        if n.type_name != "Assign":
            continue
        reader = readers.get(n.get_variable_id())
        if reader is not None and affinity[n] != affinity[reader]:
            if manual_affinity(n) is not None and manual_affinity(reader) is not None:
                raise NotSupportedError(
                    f"HETERO: variable '{n.get_variable_id()}' is read on {affinity[reader]} "
                    f"('{reader.friendly_name}') but assigned on {affinity[n]} ('{n.friendly_name}'); "
                    "a ReadValue and its Assign must run on one device")
            affinity[n] = affinity[reader]


def full_affinity(order: list[Node], affinity: dict[Node, str]) -> dict[Node, str]:
    """``affinity`` extended to Parameters, Constants and Results, for ``query_model`` and the .dot file:
    a Parameter or Constant takes the device of a node that reads it, a Result its producer's."""
    out = dict(affinity)
    for n in reversed(order):
        for o in n.input_values():
            if o is not None and o.node not in out and n in out:
                out[o.node] = out[n]
    for n in order:
        if isinstance(n, Result) and n.input_value(0).node in out:
            out[n] = out[n.input_value(0).node]
    return out
