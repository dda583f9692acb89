"""Groups of FakeQuantize nodes that go back to float together, and the revert itself.

A layer runs in int8 only when all its quantized inputs are int8, so removing one quantizer means removing the
others that feed the same layers (NNCF's ``find_quantizer_nodes_to_cut``): an activation quantizer, the weight
quantizer of the convolution that reads it, the quantizer on the other input of a residual Add, every quantizer
of a Concat's inputs... A group is a connected set of quantizers and the ops that read them (through
quantization-agnostic ops such as MaxPool, Reshape or Concat). Reverting a group removes its quantizers and gives
its layers back the biases they had before bias correction.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 3, 8, 8], ov.Type.f32, name="x")
>>> w = np.ones((4, 3, 1, 1), np.float32)
>>> y = ov.opset1.convolution(x, w, [1, 1], [0, 0], [0, 0], [1, 1], name="conv")
>>> data = ov.Dataset([np.ones((1, 3, 8, 8), np.float32)])
>>> q = ov.quantize(ov.Model([ov.opset1.relu(y)], [x]), data, fast_bias_correction=False)
>>> [(g.quantizers, g.layers) for g in find_quantizer_groups(q)]
[(['x/fq_output_0', 'conv/fq_weights_1'], ['conv'])]
>>> [n.type_name for n in revert_groups(q, find_quantizer_groups(q), {}).get_ordered_ops()]
['Parameter', 'Constant', 'Convolution', 'Relu', 'Result']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vinerun.ir import Model, Node
from vinerun.ir.core_ops import Constant
from vinerun.quantization.graph import LINEAR_OPS
from vinerun.quantization.placement import AGNOSTIC

#: ops a group extends through, downstream and upstream: they pass int8 values on unchanged
PASS_THROUGH = AGNOSTIC | {"Concat", "Split", "VariadicSplit"}


@dataclass
class QuantizerGroup:
    """Quantizers (FakeQuantize friendly names) removed together, and the linear layers that go back to float."""

    quantizers: list[str]
    layers: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{len(self.quantizers)} quantizers ({', '.join(self.quantizers)})"


def find_quantizer_groups(model: Model) -> list[QuantizerGroup]:
    """The groups of ``model``'s FakeQuantize nodes, in topological order of their first quantizer."""
    ops = model.get_ordered_ops()
    parent: dict[int, int] = {}

    def find(k: int) -> int:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    fqs = [n for n in ops if n.type_name == "FakeQuantize"]
    for fq in fqs:
        for reader in _readers(fq):
            union(id(fq), id(reader))
            for other in _feeding_quantizers(reader):
                union(id(other), id(reader))
    by_root: dict[int, QuantizerGroup] = {}
    for node in ops:
        if id(node) not in parent:
            continue
        group = by_root.setdefault(find(id(node)), QuantizerGroup([]))
        if node.type_name == "FakeQuantize":
            group.quantizers.append(node.friendly_name)
        elif node.type_name in LINEAR_OPS:
            group.layers.append(node.friendly_name)
    return [g for g in by_root.values() if g.quantizers]


def freeze_names(model: Model) -> None:
    """Give every node of ``model`` an explicit friendly name, unique in the model, so that the names the groups
    hold find the same nodes in clones (an unnamed node's default name is made anew by each clone)."""
    seen: set[str] = set()
    for node in model.get_ordered_ops():
        name, k = node.friendly_name, 1
        while name in seen:
            name, k = f"{node.friendly_name}_{k}", k + 1
        seen.add(name)
        node.set_friendly_name(name)


def bias_values(model: Model) -> dict[str, tuple[int, np.ndarray]]:
    """``{bias Add name: (bias port, value)}`` for each linear layer followed by an Add of a constant."""
    biases = {}
    for node in model.get_ordered_ops():
        if node.type_name not in LINEAR_OPS:
            continue
        readers = list(node.output(0).get_target_inputs())
        if len(readers) != 1 or readers[0].get_node().type_name != "Add":
            continue
        add = readers[0].get_node()
        port = 1 - readers[0].get_index()
        source = add.input_value(port).node
        if source.type_name == "Constant":
            biases[add.friendly_name] = (port, np.asarray(source.get_value()))
    return biases


def revert_groups(model: Model, groups: list[QuantizerGroup], original_biases: dict[str, tuple[int, np.ndarray]]
                  ) -> Model:
    """A copy of ``model`` with the quantizers of ``groups`` removed and their layers' biases set back to
    ``original_biases`` (from ``bias_values`` of the model before quantization; names from ``freeze_names``)."""
    work = model.clone()
    by_name = {n.friendly_name: n for n in work.get_ordered_ops()}
    for group in groups:
        for name in group.quantizers:
            fq = by_name[name]
            source = fq.input_value(0)
            for target in list(fq.output(0).get_target_inputs()):
                target.get_node().set_argument(target.get_index(), source)
        for name in group.layers:
            readers = list(by_name[name].output(0).get_target_inputs())
            add = readers[0].get_node() if len(readers) == 1 else None
            if add is None or add.friendly_name not in original_biases:
                continue
            port, value = original_biases[add.friendly_name]
            old = add.input_value(port).node
            if old.type_name == "Constant" and not np.array_equal(np.asarray(old.get_value()), value):
                add.set_argument(port, Constant(value, name=old.friendly_name).output(0))
    work.validate_nodes_and_infer_types()
    return work


def _readers(fq: Node) -> list[Node]:
    """The ops that read ``fq``'s output, looking through pass-through ops."""
    found, stack, seen = [], [fq], set()
    while stack:
        node = stack.pop()
        for out in node.outputs():
            for target in out.get_target_inputs():
                reader = target.get_node()
                if id(reader) in seen:
                    continue
                seen.add(id(reader))
                (stack if reader.type_name in PASS_THROUGH else found).append(reader)
    return found


def _feeding_quantizers(node: Node) -> list[Node]:
    """The FakeQuantize nodes whose values reach ``node``'s inputs, looking through pass-through ops."""
    found, stack, seen = [], [node], set()
    while stack:
        current = stack.pop()
        for value in current.input_values():
            producer = value.node
            if id(producer) in seen:
                continue
            seen.add(id(producer))
            if producer.type_name == "FakeQuantize":
                found.append(producer)
            elif producer.type_name in PASS_THROUGH:
                stack.append(producer)
    return found
