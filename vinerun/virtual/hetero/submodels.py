"""Cut a model along its subgraphs: one ``Model`` per subgraph, linked by intermediate tensors.

Every tensor is named by a key ``(id(producer), output index)``. A submodel reads the keys of its
Parameters (model inputs, or tensors another subgraph makes) and writes the keys of its Results
(tensors another subgraph or a model output reads). Constants are copied into each submodel that
reads them. Cloned nodes keep their friendly names, so profiling and errors name the user's nodes.

>>> split = build_split(model, subgraphs)
>>> [(s.device, s.model.get_parameters()) for s in split.submodels]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.virtual.hetero.partition import Subgraph

Key = tuple[int, int]


def key_of(output: Output) -> Key:
    return (id(output.node), output.index)


@dataclass
class Submodel:
    """One subgraph as a model of its own, and the tensors it reads and writes.

    >>> sub.device, [p.friendly_name for p in sub.model.get_parameters()]
    ('CPU', ['scores'])
    """

    device: str
    model: Model
    input_keys: list[Key]
    output_keys: list[Key]


@dataclass
class Split:
    """A model cut into submodels (in execution order), and where the model's outputs come from.

    >>> [s.device for s in build_split(model, subgraphs).submodels]
    ['GNA', 'CPU']
    """

    submodels: list[Submodel]
    parameter_keys: list[Key]
    output_keys: list[Key]
    #: values of model outputs that read a Constant directly
    constants: dict[Key, Any] = field(default_factory=dict)


def build_split(model: Model, subgraphs: list[Subgraph[Node]]) -> Split:
    """One :class:`Submodel` per subgraph (``subgraphs`` in execution order)."""
    order = model.get_ordered_ops()
    group_of = {n: i for i, g in enumerate(subgraphs) for n in g.nodes}
    wanted: dict[int, list[Output]] = {i: [] for i in range(len(subgraphs))}
    for n in order:
        for o in n.input_values():
            g = group_of.get(o.node) if o is not None else None
            if g is not None and group_of.get(n) != g and o not in wanted[g]:
                wanted[g].append(o)
    submodels = [_cut(model, i, g, wanted[i]) for i, g in enumerate(subgraphs)]
    constants = {}
    for r in model.get_results():
        src = r.input_value(0)
        if isinstance(src.node, Constant):
            constants[key_of(src)] = src.node.evaluate([])[0]
    return Split(submodels, [key_of(p.output(0)) for p in model.get_parameters()],
                 [key_of(r.input_value(0)) for r in model.get_results()], constants)


def _cut(model: Model, index: int, subgraph: Subgraph[Node], outputs: list[Output]) -> Submodel:
    members = set(subgraph.nodes)
    mapped: dict[Key, Output] = {}
    params: list[Parameter] = []
    input_keys: list[Key] = []

    def source(o: Output) -> Output:
        k = key_of(o)
        if k in mapped:
            return mapped[k]
        if isinstance(o.node, Constant):
            mapped[k] = o.node.clone_with_new_inputs([]).output(0)
            return mapped[k]
        p = _parameter_for(o)
        params.append(p)
        input_keys.append(k)
        mapped[k] = p.output(0)
        return mapped[k]

    sinks = []
    sink_nodes = set(model.get_sinks())
    for n in subgraph.nodes:
        inputs = [None if o is None else (mapped[key_of(o)] if o.node in members else source(o))
                  for o in n.input_values()]
        clone = n.clone_with_new_inputs(inputs)
        for o in n.outputs():
            mapped[key_of(o)] = clone.output(o.index)
        if n in sink_nodes:
            sinks.append(clone)
    results = [Result(mapped[key_of(o)]) for o in outputs]
    name = f"{model.friendly_name}_subgraph{index}"
    sub = Model(results, params, name, sinks=sinks)
    return Submodel(subgraph.device, sub, input_keys, [key_of(o) for o in outputs])


def _parameter_for(o: Output) -> Parameter:
    """A Parameter standing for ``o``: a model input keeps its name and layout; an intermediate tensor
    is named after its producer (``name`` or ``name:port``) and keeps the tensor names."""
    if isinstance(o.node, Parameter):
        p = Parameter(o.node.element_type, o.node.get_partial_shape(), name=o.node.friendly_name)
        p.layout = o.node.layout
        p.rt_info = dict(o.node.rt_info)
    else:
        suffix = f":{o.index}" if o.node.get_output_size() > 1 else ""
        p = Parameter(o.element_type, o.partial_shape, name=f"{o.node.friendly_name}{suffix}")
    names = set(o.get_names()) or {p.friendly_name}
    p.output(0).set_names(names)
    return p
