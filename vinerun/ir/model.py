"""``Model``: a graph from Parameters to Results (plus sinks such as Assign)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.node import ConstOutput, Node, Output, as_output
from vinerun.ir.rt_map import OVAny, RTMap
from vinerun.ir.shape import PartialShape, as_partial_shape


def topological_order(roots: Iterable[Node], done: set[int] | None = None) -> list[Node]:
    """Every node reachable (backwards) from ``roots``, producers before consumers (leaving out the nodes
    whose ids are in ``done``)."""
    order: list[Node] = []
    state: dict[int, int] = dict.fromkeys(done, 2) if done else {}  # 1 = on stack, 2 = done
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


#: Tensor names this process generated from generated node names (``Result_57``): the model cache
#: maps them to placeholders so the same model built twice gets one key.
GENERATED_TENSOR_NAMES: set[str] = set()


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
            elif isinstance(r, Node) and r.get_output_size() != 1:  # as OpenVINO: every output of the node
                self._results.extend(Result(o) for o in r.outputs())
            else:
                self._results.append(Result(as_output(r)))
        self._sinks: list[Node] = [s.node if isinstance(s, Output) else s for s in (sinks or [])]
        if parameters is None:
            parameters = [n for n in topological_order(self._roots()) if isinstance(n, Parameter)]
        self._parameters: list[Parameter] = list(parameters)
        self._name = name
        self._friendly_name = name or "Model"
        self._rt_info: dict[str, Any] = {}
        self._variables: list[Any] = list(variables or [])
        # ReadValue/Assign built from the same variable_id name one variable (as OpenVINO's node factory)
        for n in [*self._sinks, *self.get_ordered_ops()]:
            v = getattr(n, "variable", None)
            if v is not None and all(v is not x and v.info.variable_id != x.info.variable_id
                                     for x in self._variables):
                self._variables.append(v)
        self._check_parameters()
        self._set_default_tensor_names()

    def _set_default_tensor_names(self) -> None:
        """Give every unnamed model input and output a tensor name, as OpenVINO's Python ``Model`` does:
        the Parameter's or Result's friendly name, so results can always be looked up by name."""
        for port in [*self.inputs, *self.outputs]:
            if not port.get_names():
                port.set_names({port.node.friendly_name})
                if port.node._friendly_name is None:
                    GENERATED_TENSOR_NAMES.add(port.node.friendly_name)

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
        """The whole runtime info (an RTMap), or the value at ``path`` (a key or a list of keys) as an OVAny."""
        if path is None:
            return RTMap(self._rt_info)
        return OVAny(self._rt_info_at(path))

    def _rt_info_at(self, path: Any) -> Any:
        keys = [path] if isinstance(path, str) else list(path)
        cur: Any = self._rt_info
        for k in keys:
            if not isinstance(cur, dict) or k not in cur:
                raise RuntimeError("Cannot get runtime attribute. Path to runtime attribute is incorrect.")
            cur = cur[k]
        return cur

    def set_rt_info(self, value: Any, path: Any) -> None:
        keys = [path] if isinstance(path, str) else list(path)
        cur = self._rt_info
        for k in keys[:-1]:
            nxt = cur.get(k)
            if not isinstance(nxt, dict):
                nxt = cur[k] = {}
            cur = nxt
        cur[keys[-1]] = OVAny(value).value

    @property
    def rt_info(self) -> RTMap:
        """The model's runtime info (a live RTMap); assigning a dict replaces it."""
        return RTMap(self._rt_info)

    @rt_info.setter
    def rt_info(self, value: Any) -> None:
        self._rt_info = RTMap(value).to_dict() if isinstance(value, RTMap) else OVAny(dict(value)).value

    def has_rt_info(self, path: Any) -> bool:
        try:
            self._rt_info_at(path)
            return True
        except RuntimeError:
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
        # OpenVINO's order: its sort pops roots (results, sinks, parameters) off a stack, so the last
        # parameter comes first (unused ones too), then the last sink's subgraph ... the first result's;
        # within a subgraph, depth first with input 0 first
        params = list(reversed(self._parameters))
        return params + topological_order(reversed(self._roots()), done={id(p) for p in params})

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

    def get_sink_index(self, sink: Node | Output) -> int:
        if isinstance(sink, Output):
            sink = sink.node
        if not isinstance(sink, Node):
            raise TypeError("Incorrect argument type. Sink node is expected as argument.")
        return next((i for i, s in enumerate(self._sinks) if s is sink), -1)

    def add_parameters(self, parameters: Sequence[Parameter]) -> None:
        self._parameters.extend(parameters)

    def add_results(self, results: Sequence[Result]) -> list[Result]:
        self._results.extend(results)
        return list(results)

    def add_sinks(self, sinks: Sequence[Node | Output]) -> None:
        for s in sinks:
            node = s.node if isinstance(s, Output) else s
            self._sinks.append(node)
            v = getattr(node, "variable", None)
            if v is not None and all(v is not x and v.info.variable_id != x.info.variable_id
                                     for x in self._variables):
                self._variables.append(v)

    def remove_variable(self, variable: Any) -> None:
        self._variables = [v for v in self._variables if v is not variable]

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

    def input(self, key: int | str | None = None, *, index: int | None = None,
              tensor_name: str | None = None) -> Output:
        key = next((k for k in (key, index, tensor_name) if k is not None), None)  # OpenVINO's keyword forms
        return self._port(self.inputs, key, "input", [p.friendly_name for p in self._parameters])

    def output(self, key: int | str | None = None, *, index: int | None = None,
               tensor_name: str | None = None) -> Output:
        key = next((k for k in (key, index, tensor_name) if k is not None), None)
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
        """True when any op of the model has an input or output of a dynamic shape (as OpenVINO)."""
        for n in self.get_ordered_ops():
            if any(d.partial_shape.is_dynamic for d in n._outputs):
                return True
        return False

    dynamic = property(is_dynamic)

    def _get_raw_address(self) -> int:
        return id(self)

    def __copy__(self) -> Model:
        raise TypeError("Cannot copy 'openvino.Model'. Please, use deepcopy instead.")

    def __deepcopy__(self, memo: dict) -> Model:
        return self.clone()

    def evaluate(self, output_tensors: list[Any], input_tensors: list[Any], evaluation_context: Any = None) -> bool:
        """Run the model's reference on ``input_tensors`` (one per Parameter) into ``output_tensors``."""
        from vinerun.ir.interpreter import run_reference
        from vinerun.ir.node_api import as_array, write_results

        arrays = [as_array(t) for t in input_tensors]
        if len(arrays) != len(self._parameters) or len(output_tensors) != len(self._results):
            raise RuntimeError(f"Cannot evaluate model! It has {len(self._parameters)} inputs and "
                               f"{len(self._results)} outputs; got {len(arrays)} and {len(output_tensors)} tensors")
        for p, a in zip(self._parameters, arrays, strict=True):
            if not p.get_output_partial_shape(0).compatible(list(a.shape)):
                raise RuntimeError(f"Cannot evaluate model! Input '{p.friendly_name}' has shape "
                                   f"{p.get_output_partial_shape(0)}; got {list(a.shape)}")
        try:
            results = run_reference(self, arrays)
        except Exception as e:
            raise RuntimeError(f"Cannot evaluate model! {e}") from e
        write_results(output_tensors, results)
        return True

    # --- editing -----------------------------------------------------------------------
    def validate_nodes_and_infer_types(self) -> None:
        for n in self.get_ordered_ops():
            n.validate_and_infer_types()

    def reshape(self, shapes: Any, variables_shapes: Any = None) -> None:
        """Set new input shapes and re-infer.

        ``shapes``: one shape (a model with one input), or a dict keyed by input port, index or tensor name;
        a shape is a PartialShape, a list/tuple of dims (ints, ``(min, max)`` pairs, Dimensions) or a string
        such as ``"[1,3,?,..224]"``. ``variables_shapes``: new shapes of variables, keyed by variable_id.
        """
        if isinstance(shapes, dict):
            items = []
            for k, v in shapes.items():
                if not isinstance(k, (Output, int, str)) or isinstance(k, bool):
                    raise TypeError(f"Incorrect key type {type(k)} to reshape a model, "
                                    "expected keys as openvino.Output, int or str.")
                items.append((k if isinstance(k, Output) else self.input(k), _reshape_value(v)))
        else:
            if len(self._parameters) != 1:
                raise RuntimeError(f"Model '{self.friendly_name}' has {len(self._parameters)} inputs; "
                                   "pass a dict of shapes keyed by input name or index")
            items = [(self.inputs[0], _reshape_value(shapes))]
        var_items = []
        for k, v in (variables_shapes or {}).items():
            if not isinstance(k, str):
                raise TypeError(f"Incorrect key type {type(k)} to reshape a model, expected values as str.")
            var_items.append((k, _reshape_value(v)))
        for var_id, shape in var_items:
            found = False
            for n in [*self.get_ordered_ops(), *self._sinks]:
                var = getattr(n, "variable", None)
                if var is not None and var.info.variable_id == var_id:
                    var.update_data_shape(shape)
                    found = True
            if not found:
                raise RuntimeError(f"Model '{self.friendly_name}' has no variable '{var_id}'")
        for port, shape in items:
            port.node.set_partial_shape(shape)
        self.validate_nodes_and_infer_types()

    def add_outputs(self, outputs: Any) -> list[Output]:
        """Add Results for tensors given by name, ``(node_name, port)``, or ``Output`` (one, or a list)."""
        if isinstance(outputs, list):
            specs = [(s, f" at index {i}") for i, s in enumerate(outputs)]
        else:
            specs = [(outputs, "")]
        by_node = {n.friendly_name: n for n in self.get_ordered_ops()}
        added = []
        for spec, where in specs:
            if isinstance(spec, Output):
                out = spec
            elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and isinstance(spec[1], int):
                node = by_node.get(spec[0])
                if node is None:
                    raise RuntimeError(f"Model '{self.friendly_name}' has no node named '{spec[0]}'")
                if not 0 <= spec[1] < node.get_output_size():
                    raise RuntimeError(f"Node '{spec[0]}' has no output {spec[1]} "
                                       f"(it has {node.get_output_size()})")
                out = node.output(spec[1])
            elif isinstance(spec, str):
                out = self._find_tensor(spec, by_node)
            else:
                raise TypeError(f"Incorrect type of a value to add as output{where}.")
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
        m._rt_info = _copy_maps(self._rt_info)
        return m

    def __repr__(self) -> str:
        # as OpenVINO: the ports are shown as ConstOutput, one per line
        def ports(outs: list[Output]) -> str:
            return ",\n".join(repr(ConstOutput(o.node, o.index)) for o in outs)

        return f"<Model: '{self.friendly_name}'\ninputs[\n{ports(self.inputs)}\n]\noutputs[\n{ports(self.outputs)}\n]>"


def _reshape_value(value: Any) -> PartialShape:
    if isinstance(value, (PartialShape, str, list, tuple)):
        return as_partial_shape(value)
    raise TypeError(f"Incorrect value type {type(value)} to reshape a model, "
                    "expected values as openvino.PartialShape, str, list or tuple.")


def _copy_maps(values: dict[str, Any]) -> dict[str, Any]:
    """A copy of nested runtime-info maps (the leaf values are shared)."""
    return {k: _copy_maps(v) if isinstance(v, dict) else v for k, v in values.items()}
