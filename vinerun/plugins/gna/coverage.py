"""What of a model GNA can run: layers the device refuses, and layers the bit-exact path does not cover.

Two levels, named separately because they fail differently:

- *device*: a layer type GNA never ran (:data:`~vinerun.plugins.gna.limits.SUPPORTED`); compiling fails
  with ``The plugin does not support layer <n> (type <t>)!`` in every mode.
- *exact*: a type GNA ran but ``GNA_SW_EXACT`` does not cover yet (:data:`EXACT_TYPES`); the model
  compiles in ``GNA_SW_FP32`` and ``GNA_SW_EXACT`` raises ``NotSupportedError``.

Constants and the ops that only feed shapes or weights are not counted (they fold away).

>>> report = coverage(model)                   # doctest: +SKIP
>>> report.device_blockers                     # doctest: +SKIP
{'Pad': ['/stft/Pad'], 'Sqrt': [...], ...}
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.plugin_api.variable_state import constant_value
from vinerun.plugins.gna.cells import CELLS
from vinerun.plugins.gna.limits import SUPPORTED

#: the types the exact path compiles (exact.py, plus the decomposed cells)
EXACT_TYPES = frozenset({"Parameter", "Result", "Constant", "MatMul", "Sigmoid", "Tanh", "SoftSign", "Relu", "Clamp",
                         "Add", "Subtract", "Multiply", "Concat", "ReadValue", "Assign", "Reshape", "Squeeze",
                         "Unsqueeze", "Convert", "FakeQuantize", "QuantizeLinear", "DequantizeLinear", *CELLS})


@dataclass
class Coverage:
    """Node names by type: those the device refuses and those only the float mode runs.

    >>> Coverage().runs_exact
    True
    """

    device_blockers: dict[str, list[str]] = field(default_factory=dict)
    exact_blockers: dict[str, list[str]] = field(default_factory=dict)
    layers: int = 0

    @property
    def runs_on_device(self) -> bool:
        return not self.device_blockers

    @property
    def runs_exact(self) -> bool:
        return not self.device_blockers and not self.exact_blockers

    def lines(self) -> list[str]:
        """A readable report, one line per blocking type."""
        out = [f"{self.layers} layers; GNA device: {'runs' if self.runs_on_device else 'refuses'}; "
               f"GNA_SW_EXACT: {'covers it' if self.runs_exact else 'does not cover it'}"]
        out += [f"  not a GNA layer: {t} x{len(n)} ({', '.join(n[:3])}{', ...' if len(n) > 3 else ''})"
                for t, n in sorted(self.device_blockers.items())]
        out += [f"  not in GNA_SW_EXACT yet: {t} x{len(n)} ({', '.join(n[:3])}{', ...' if len(n) > 3 else ''})"
                for t, n in sorted(self.exact_blockers.items())]
        return out


def coverage(model: Model) -> Coverage:
    """Classify every computing node of ``model`` (constant subgraphs are skipped)."""
    device: dict[str, list[str]] = defaultdict(list)
    exact: dict[str, list[str]] = defaultdict(list)
    folded: set[int] = set()
    layers = 0
    for node in model.get_ordered_ops():
        inputs = [v.node for v in node.input_values()]
        if node.type_name == "Constant" or constant_value(node.output(0)) is not None or (
                inputs and node.type_name not in ("Result", "Assign", "ReadValue")
                and all(id(n) in folded for n in inputs)):
            folded.add(id(node))
            continue
        if node.type_name in ("Parameter", "Result"):
            continue
        layers += 1
        if node.type_name not in SUPPORTED:
            device[node.type_name].append(node.friendly_name)
        elif node.type_name not in EXACT_TYPES:
            exact[node.type_name].append(node.friendly_name)
    return Coverage(dict(device), dict(exact), layers)


_MOVERS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Convert"})
_ENDS = frozenset({"Parameter", "Result", "Constant"})


def _static(node: Node) -> bool:
    return all(node.get_output_partial_shape(i).is_static for i in range(node.get_output_size())) and all(
        v.get_partial_shape().is_static for v in node.input_values())


def _exact_layer(node: Node) -> bool:
    """Whether GNA_SW_EXACT compiles ``node`` as it stands (types alone are not enough: weights must be
    constants, eltwise operands activations of one shape, a constant addend only a fused affine bias)."""
    t = node.type_name
    consts = [constant_value(v) is not None for v in node.input_values()]
    if t == "MatMul":
        w = constant_value(node.input_value(1))
        return (not consts[0] and w is not None and np.ndim(w) == 2
                and not node.get_attributes().get("transpose_a"))
    if t in ("Add", "Subtract", "Multiply"):
        if any(consts):
            other = [v for v, c in zip(node.input_values(), consts, strict=True) if not c]
            return t == "Add" and len(other) == 1 and other[0].node.type_name == "MatMul"
        shapes = [list(v.get_partial_shape().to_shape()) for v in node.input_values()]
        return shapes[0] == shapes[1]
    if t in CELLS:
        first_weight = 2 if t == "GRUCell" else 3 if t == "LSTMCell" else 4
        return all(consts[first_weight:])
    return True


def supported_nodes(model: Model, exact: bool) -> set[str]:
    """Friendly names of the nodes GNA compiles: a GNA layer with static shapes and, when ``exact``
    (every mode but GNA_SW_FP32), one the integer path covers. ``GNAPlugin.query_model`` answers this,
    so HETERO gives GNA only what it can run."""
    claimed: set[int] = set()
    movers: list[Node] = []
    nodes = model.get_ordered_ops()
    for node in nodes:
        t = node.type_name
        if t not in SUPPORTED or not _static(node):
            continue
        if exact and (t not in EXACT_TYPES or not _exact_layer(node)):
            continue
        if t in _MOVERS:
            movers.append(node)
        else:
            claimed.add(id(node))
    # a reshape-like op goes to GNA only next to a GNA layer (alone it would make an input-only subgraph)
    changed = True
    while changed:
        changed = False
        for node in movers:
            if id(node) in claimed:
                continue
            near = [v.node for v in node.input_values()] + [t.get_node() for t in node.output(0).get_target_inputs()]
            if any(id(n) in claimed and n.type_name not in _ENDS for n in near):
                claimed.add(id(node))
                changed = True
    return {n.friendly_name for n in nodes if id(n) in claimed}
