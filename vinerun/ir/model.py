"""``Model``: a graph from Parameters to Results (plus sinks such as Assign)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.node import Node, Output, as_output
from vinerun.ir.shape import PartialShape, as_partial_shape


def topological_order(roots: Iterable[Node]) -> list[Node]:
    """Every node reachable (backwards) from ``roots``, producers before consumers."""
    order: list[Node] = []
    state: dict[int, int] = {}  # 1 = on stack, 2 = done
    for root in roots:
        if state.get(id(root)) == 2:
            continue
        stack: list[tuple[Node, int]] = [(root, 0)]
        state[id(root)] = 1
        while stack:
            node, i = stack[-1]
            deps = [o.node for o in node._inputs if o is not None] + node_control_deps(node)
            if i < len(deps):
                stack[-1] = (node, i + 1)
                dep = deps[i]
                s = state.get(id(dep))
                if s is None:
                    state[id(dep)] = 1
                    stack.append((dep, 0))
                elif s == 1:
                    raise ValidationError(f"The graph has a cycle through node '{dep.friendly_name}'")
            else:
                stack.pop()
                state[id(node)] = 2
                order.append(node)
    return order


def node_control_deps(node: Node) -> list[Node]:
    return node.rt_info.get("__control_deps__", []) if node.rt_info else []


class Model:
    """A model: ``Model(results, parameters, name)``.

    >>> from vinerun import opset13 as ops
    >>> p = ops.parameter([1, 4], name="x")
    >>> m = Model([ops.relu(p)], [p], "relu")
    >>> m.input().get_any_name(), m.output(0).partial_shape
    ('x', <PartialShape: [1,4]>)
    """

    def __init__(self, results: Any, parameters: Sequence[Parameter] | None = None, name: str = "",
                 sinks: Sequence[Node] | None = None, variables: Sequence[Any] | None = None):
        if isinstance(results, (Node, Output)):
            results = [results]
        if isinstance(name, (list, tuple)):  # OpenVINO's Model(results, sinks, parameters[, name])
            sinks, parameters, name = parameters, name, sinks if isinstance(sinks, str) else ""
        self._results: list[Result] = []
        for r in results:
            if isinstance(r, Result):
                self._results.append(r)
            else:
                self._results.append(Result(as_output(r)))
        self._sinks: list[Node] = list(sinks or [])
        if parameters is None:
            parameters = [n for n in topological_order(self._roots()) if isinstance(n, Parameter)]
        self._parameters: list[Parameter] = list(parameters)
        self._name = name
        self._friendly_name = name or "Model"
        self.rt_info: dict[str, Any] = {}
        self._variables: list[Any] = list(variables or [])
        for s in self._sinks:
            v = getattr(s, "variable", None)
            if v is not None and all(v is not x for x in self._variables):
                self._variables.append(v)
        for n in self.get_ordered_ops():
            v = getattr(n, "variable", None)
            if v is not None and all(v is not x for x in self._variables):
                self._variables.append(v)
        self._check_parameters()

    def _roots(self) -> list[Node]:
        return [*self._results, *self._sinks]

    def _check_parameters(self) -> None:
        known = {id(p) for p in self._parameters}
        for n in self.get_ordered_ops():
            if isinstance(n, Parameter) and id(n) not in known:
                raise ValidationError(
                    f"Model '{self.friendly_name}': Parameter '{n.friendly_name}' is used but not listed in "
                    "the model's parameters")

    # --- names -------------------------------------------------------------------------
    def get_name(self) -> str:
        return self._name or self._friendly_name

    name = property(get_name)

    def get_friendly_name(self) -> str:
        return self._friendly_name

    def set_friendly_name(self, name: str) -> None:
        self._friendly_name = name

    friendly_name = property(get_friendly_name, set_friendly_name)

    def get_rt_info(self, path: Any = None) -> Any:
        if path is None:
            return self.rt_info
        keys = [path] if isinstance(path, str) else list(path)
        cur: Any = self.rt_info
        for k in keys:
            cur = cur[k]
        return cur

    def set_rt_info(self, value: Any, path: Any) -> None:
        keys = [path] if isinstance(path, str) else list(path)
        cur = self.rt_info
        for k in keys[:-1]:
            cur = cur.setdefault(k, {})
        cur[keys[-1]] = value

    def has_rt_info(self, path: Any) -> bool:
        try:
            self.get_rt_info(path)
            return True
        except (KeyError, TypeError):
            return False

    # --- structure ---------------------------------------------------------------------
    def get_parameters(self) -> list[Parameter]:
        return list(self._parameters)

    parameters = property(get_parameters)

    def get_results(self) -> list[Result]:
        return list(self._results)

    results = property(get_results)

    def get_sinks(self) -> list[Node]:
        return list(self._sinks)

    sinks = property(get_sinks)

    def get_variables(self) -> list[Any]:
        return list(self._variables)

    variables = property(get_variables)

    def get_variable_by_id(self, variable_id: str) -> Any:
        for v in self._variables:
            if v.info.variable_id == variable_id:
                return v
        raise KeyError(f"Model '{self.friendly_name}' has no variable '{variable_id}'")

    def add_variables(self, variables: Sequence[Any]) -> None:
        self._variables.extend(variables)

    def get_ordered_ops(self) -> list[Node]:
        order = topological_order(self._roots())
        seen = {id(n) for n in order}
        # Unused parameters are still part of the model.
        return [p for p in self._parameters if id(p) not in seen] + order

    def get_ops(self) -> list[Node]:
        return self.get_ordered_ops()

    def get_parameter_index(self, parameter: Parameter) -> int:
        for i, p in enumerate(self._parameters):
            if p is parameter:
                return i
        return -1

    def get_result_index(self, value: Any) -> int:
        for i, r in enumerate(self._results):
            if r is value or (isinstance(value, Output) and (r.output(0) == value or r.input_value(0) == value)):
                return i
        return -1

    def get_sink_index(self, sink: Node) -> int:
        return next((i for i, s in enumerate(self._sinks) if s is sink), -1)

    def add_parameters(self, parameters: Sequence[Parameter]) -> None:
        self._parameters.extend(parameters)

    def add_results(self, results: Sequence[Result]) -> None:
        self._results.extend(results)

    def add_sinks(self, sinks: Sequence[Node]) -> None:
        self._sinks.extend(sinks)

    def remove_result(self, result: Result) -> None:
        self._results = [r for r in self._results if r is not result]
        result.detach()

    def remove_parameter(self, parameter: Parameter) -> None:
        self._parameters = [p for p in self._parameters if p is not parameter]

    def remove_sink(self, sink: Node) -> None:
        self._sinks = [s for s in self._sinks if s is not sink]

    def replace_parameter(self, index: int, parameter: Parameter) -> None:
        old = self._parameters[index]
        old.output(0).replace(parameter.output(0))
        self._parameters[index] = parameter

    # --- ports -------------------------------------------------------------------------
    @property
    def inputs(self) -> list[Output]:
        return [p.output(0) for p in self._parameters]

    @property
    def outputs(self) -> list[Output]:
        return [r.output(0) for r in self._results]

    def input(self, key: int | str | None = None) -> Output:
        return self._port(self.inputs, key, "input", [p.friendly_name for p in self._parameters])

    def output(self, key: int | str | None = None) -> Output:
        return self._port(self.outputs, key, "output", [r.input_value(0).node.friendly_name for r in self._results])

    def _port(self, ports: list[Output], key: Any, what: str, node_names: list[str]) -> Output:
        if key is None:
            if len(ports) != 1:
                raise RuntimeError(f"Model '{self.friendly_name}' has {len(ports)} {what}s; name or index one")
            return ports[0]
        if isinstance(key, int):
            if not 0 <= key < len(ports):
                raise IndexError(f"Model '{self.friendly_name}' has no {what} {key} (it has {len(ports)})")
            return ports[key]
        if isinstance(key, Output):
            for p in ports:
                if p == key:
                    return p
        for p in ports:
            if key in p.get_names():
                return p
        for p, n in zip(ports, node_names, strict=True):
            if n == key:
                return p
        known = sorted(n for p in ports for n in p.get_names())
        raise RuntimeError(f"Model '{self.friendly_name}' has no {what} named '{key}'. Known: {known}")

    def get_output_size(self) -> int:
        return len(self._results)

    def get_output_element_type(self, i: int) -> Any:
        return self._results[i].get_output_element_type(0)

    def get_output_partial_shape(self, i: int) -> PartialShape:
        return self._results[i].get_output_partial_shape(0)

    def get_output_shape(self, i: int) -> Any:
        return self._results[i].get_output_shape(0)

    def get_output_op(self, i: int) -> Node:
        return self._results[i]

    def get_result(self) -> Result:
        return self._results[0]

    result = property(get_result)

    def is_dynamic(self) -> bool:
        return any(o.partial_shape.is_dynamic for o in (*self.inputs, *self.outputs))

    # --- editing -----------------------------------------------------------------------
    def validate_nodes_and_infer_types(self) -> None:
        for n in self.get_ordered_ops():
            n.validate_and_infer_types()

    def reshape(self, shapes: Any, variables_shapes: Any = None) -> None:
        """Set new input shapes and re-infer: a shape (one input), or a dict keyed by index/name/port."""
        if isinstance(shapes, dict):
            items = [(self.input(k) if not isinstance(k, Output) else k, v) for k, v in shapes.items()]
        else:
            if len(self._parameters) != 1:
                raise RuntimeError(f"Model '{self.friendly_name}' has {len(self._parameters)} inputs; "
                                   "pass a dict of shapes keyed by input name or index")
            items = [(self.inputs[0], shapes)]
        for port, shape in items:
            port.node.set_partial_shape(as_partial_shape(shape))
        self.validate_nodes_and_infer_types()

    def add_outputs(self, outputs: Any) -> list[Output]:
        """Add Results for tensors given by name, ``(node_name, port)``, or ``Output``."""
        if not isinstance(outputs, list):
            outputs = [outputs]
        by_node = {n.friendly_name: n for n in self.get_ordered_ops()}
        added = []
        for spec in outputs:
            if isinstance(spec, Output):
                out = spec
            elif isinstance(spec, tuple):
                node = by_node.get(spec[0])
                if node is None:
                    raise RuntimeError(f"Model '{self.friendly_name}' has no node named '{spec[0]}'")
                out = node.output(spec[1])
            else:
                out = self._find_tensor(str(spec), by_node)
            existing = next((r for r in self._results if r.input_value(0) == out), None)
            if existing is None:
                existing = Result(out)
                self._results.append(existing)
            added.append(existing.output(0))
        return added

    def _find_tensor(self, name: str, by_node: dict[str, Node]) -> Output:
        for n in by_node.values():
            for o in n.outputs():
                if name in n._outputs[o.index].names:
                    return o
        if name in by_node and by_node[name].get_output_size() == 1:
            return by_node[name].output(0)
        raise RuntimeError(f"Model '{self.friendly_name}' has no tensor named '{name}'")

    def clone(self) -> Model:
        """A deep copy of the graph (constants share their arrays)."""
        mapping: dict[int, Node] = {}
        for n in self.get_ordered_ops():
            new_inputs = [None if o is None else mapping[id(o.node)].output(o.index) for o in n._inputs]
            if isinstance(n, Parameter):
                c = Parameter(n.element_type, n.shape, name=n._friendly_name)
                c.layout = n.layout
                c.rt_info = dict(n.rt_info)
                c._outputs[0].names = set(n._outputs[0].names)
                c._outputs[0].rt_info = dict(n._outputs[0].rt_info)
            else:
                c = n.clone_with_new_inputs(new_inputs)
            mapping[id(n)] = c
        params = [mapping[id(p)] for p in self._parameters]
        results = [mapping[id(r)] for r in self._results]
        sinks = [mapping[id(s)] for s in self._sinks]
        m = Model(results, params, self._name, sinks=sinks, variables=self._variables)
        m._friendly_name = self._friendly_name
        m.rt_info = dict(self.rt_info)
        return m

    def __repr__(self) -> str:
        ins = ", ".join(repr(i) for i in self.inputs)
        outs = ", ".join(repr(o) for o in self.outputs)
        return f"<Model: '{self.friendly_name}'\ninputs[\n{ins}\n]\noutputs[\n{outs}\n]>"
