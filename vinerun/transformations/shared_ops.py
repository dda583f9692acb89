"""Common-subexpression elimination (OpenVINO's ``SharedOpOptimization``): nodes that compute the same thing become
one node.

Two nodes compute the same thing when they are the same op (class, type name and version), their attributes are
equal, and each of their inputs reads the same output of the same node, or a Constant of the same element type,
shape and value. Exporters write such copies: transformers' BERT builds its attention mask's ``Where`` once per
encoder layer, each with its own pair of scalar Constants, so a device ran the same kernel twelve times.

Nodes are visited in topological order, and an input counts as the same when its node was found to compute the
same thing as the other's, so chains of copies collapse (a duplicated Broadcast, then the duplicated Select of
it); each set of copies keeps one node, whose outputs the others' readers then read. Constants are compared by
bytes up to :data:`MAX_COMPARED_BYTES`, larger ones only by identity (comparing weights would cost compile time for
nothing: exporters share equal weights already). The Constants themselves are left alone: merging them would give
a weight more readers, which fusions that fold a weight into its one reader would then refuse.

Never merged: Parameters, Results, Constants, sinks and state (ReadValue, Assign), random ops (they draw anew each
time: two draws are not one), ops with a body (If, Loop, TensorIterator...; their bodies are searched on their
own), nodes with control dependencies or that are one, and ops that are not vinerun's own (a user's extension may
keep state). A node read by a Result is never merged into another: of copies one of which is a model output, that
one is kept (the others' tensor names are then dropped rather than added to the model output's); otherwise the
first in topological order is. The kept node keeps its friendly name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir.core_ops import Constant, Result
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model, node_control_deps
from vinerun.ir.node import Node, Output
from vinerun.ir.registry import all_ops
from vinerun.transformations.pass_infra import InPlacePass, PassResult

#: Constants up to this size are compared by value; bigger ones are the same input only when they are one node
MAX_COMPARED_BYTES = 64 * 1024

#: ops whose every evaluation may differ, or that read or write state
_NEVER = frozenset({"Parameter", "Result", "Constant", "ReadValue", "Assign", "RandomUniform", "RandomUniformLike",
                    "RandomNormal", "RandomNormalLike", "Bernoulli", "Multinomial", "Dropout"})

#: the fields every Node has; anything else an op keeps in its ``__dict__`` is compared like an attribute
_NODE_FIELDS = frozenset({"_id", "_inputs", "_outputs", "_attrs", "_input_rt_info", "_friendly_name", "rt_info"})


class _Unique(Exception):
    """A node that must not be merged (an attribute that cannot be compared, a body...)."""


def _frozen(value: Any) -> Any:
    """A hashable stand-in for an attribute value: equal values give equal keys (raises :class:`_Unique` for values
    that cannot be compared)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return type(value).__name__, value  # 1, 1.0 and True are equal in Python, not as attributes
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return "dict", tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return "set", frozenset(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return "array", value.shape, tuple(_frozen(v) for v in value.reshape(-1).tolist())
        return "array", value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, np.generic):
        return _frozen(value.item())
    if isinstance(value, (Model, Node, Output)):
        raise _Unique
    try:
        hash(value)
    except TypeError:
        raise _Unique from None
    return type(value).__qualname__, value  # Type, PartialShape, enums: their own equality


def _constant_key(const: Constant) -> Any:
    value = const.get_value()
    if value.nbytes > MAX_COMPARED_BYTES:
        return "node", id(const)
    return "const", const.get_output_element_type(0).get_type_name(), _frozen(value)


class _Keys:
    """The key of each node: equal keys, same computation. A node's inputs are keyed by the class of their node
    (the nodes found to compute the same thing share one) or, for a Constant, by its value."""

    def __init__(self) -> None:
        self._constants: dict[int, Any] = {}
        self._ops = {id(cls) for cls in all_ops().values()}
        #: the class of each node seen (an index)
        self.class_of: dict[int, int] = {}

    def source(self, out: Output | None) -> Any:
        if out is None:
            return None
        node = out.node
        if isinstance(node, Constant):
            key = self._constants.get(id(node))
            if key is None:
                key = self._constants[id(node)] = _constant_key(node)
            return key
        return "class", self.class_of[id(node)], out.index

    def of(self, node: Node) -> Any:
        """The node's key, or None when it is never merged."""
        if node.type_name in _NEVER or id(type(node)) not in self._ops or not node.get_output_size() \
                or node.subgraphs() or node_control_deps(node):
            return None
        extra = {k: v for k, v in node.__dict__.items() if k not in _NODE_FIELDS}
        try:
            state = (_frozen(node.get_attributes()), _frozen(extra), _frozen(node.rt_info),
                     _frozen(node._input_rt_info))
        except _Unique:
            return None
        outputs = tuple((o.element_type.get_type_name(), str(o.partial_shape)) for o in node.outputs())
        inputs = tuple(self.source(o) for o in node._inputs)
        return type(node), node.type_name, node.version, state, inputs, outputs


def _read_by_result(node: Node) -> bool:
    return any(isinstance(reader, Result) for d in node._outputs for reader, _ in d.consumers)


def _merge_into(kept: Node, duplicate: Node) -> None:
    """Give ``duplicate``'s readers ``kept``'s outputs (its tensor names go along, unless ``kept`` is a model
    output), then detach it."""
    named = not _read_by_result(kept)
    for old, new in zip(duplicate.outputs(), kept.outputs(), strict=True):
        if named:
            replace_output_update_name(old, new)
        else:
            for reader, i in list(old._desc.consumers):
                reader.set_argument(i, new)
    duplicate.detach()


def share_ops(model: Model) -> bool:
    """Merge the nodes of ``model`` (and of its bodies) that compute the same thing; returns whether any were.

    First every node is given a class in topological order (its key names its inputs' classes, so copies of
    copies share one); then each class keeps one node, a model output when one is in it (it must stay), else
    the first, and the others' readers read it. Other model outputs in a class stay."""
    order = model.get_ordered_ops()
    modified = False
    for node in order:
        for body in node.subgraphs():
            modified = share_ops(body) or modified
    unique = {id(dep) for node in order for dep in node_control_deps(node)} | {id(s) for s in model.get_sinks()}
    keys = _Keys()
    index: dict[Any, int] = {}
    members: list[list[Node]] = []
    for node in order:
        key = None if id(node) in unique else keys.of(node)
        i = index.setdefault(key, len(members)) if key is not None else len(members)
        if i == len(members):
            members.append([])
        members[i].append(node)
        keys.class_of[id(node)] = i
    for nodes in members:
        if len(nodes) < 2:
            continue
        kept = next((n for n in nodes if _read_by_result(n)), nodes[0])
        for node in nodes:
            if node is not kept and not _read_by_result(node):
                _merge_into(kept, node)
                modified = True
    return modified


class SharedOpOptimization(InPlacePass):
    """Merge nodes that compute the same thing (see the module docstring); the first of each kind stays.

    >>> SharedOpOptimization()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        return PassResult(model, share_ops(model))
