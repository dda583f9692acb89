"""Graph nodes: ``Node`` with typed attributes, and the ``Output`` / ``Input`` port handles.

An op is a ``Node`` subclass that declares its attributes with :class:`Attr`, infers its output
types in :meth:`Node.infer`, and computes in :meth:`Node.evaluate` (the NumPy reference).
The base class checks arity and wraps inference errors with the node's name and type.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.rt_map import RTMap
from vinerun.ir.shape import PartialShape, Shape, as_partial_shape
from vinerun.ir.types import Type

_ids = itertools.count()

ATTR_KINDS = {"int", "ints", "float", "floats", "bool", "str", "strs", "type", "types", "shape",
              "tensor", "model", "models", "any"}


class Attr:
    """Declares an op attribute: ``strides = Attr("ints")``; ``auto_pad = Attr("str", "explicit")``.

    ``kind`` drives IR (de)serialization; ``default`` of ``Attr.REQUIRED`` makes it mandatory.
    """

    REQUIRED: ClassVar[object] = object()

    def __init__(self, kind: str, default: Any = REQUIRED, ir_name: str | None = None):
        if kind not in ATTR_KINDS:
            raise ValueError(f"unknown attribute kind {kind!r}")
        self.kind = kind
        self.default = default
        self.ir_name = ir_name
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        if self.ir_name is None:
            self.ir_name = name

    def __get__(self, obj: Node | None, owner: type) -> Any:
        if obj is None:
            return self
        return obj._attrs.get(self.name, None if self.default is Attr.REQUIRED else self.default)

    def __set__(self, obj: Node, value: Any) -> None:
        obj._attrs[self.name] = self.coerce(value)

    def coerce(self, value: Any) -> Any:
        k = self.kind
        if value is None:
            return None
        if k == "int":
            return int(value)
        if k == "ints":
            values = value if isinstance(value, list) else np.asarray(value).reshape(-1)
            return [int(v) for v in values]
        if k == "float":
            return float(value)
        if k == "floats":
            return [float(v) for v in value]
        if k == "bool":
            return bool(value)
        if k == "type":
            return Type(value)
        if k == "shape":
            return as_partial_shape(value)
        return value


class _OutputDesc:
    __slots__ = ("element_type", "partial_shape", "names", "rt_info", "consumers", "tensor_rt_info",
                 "lower_value", "upper_value", "value_symbol")

    def __init__(self) -> None:
        self.element_type: Type = Type.dynamic
        self.partial_shape: PartialShape = PartialShape.dynamic()
        self.names: set[str] = set()
        self.rt_info: dict[str, Any] = {}  # the output port's (Output.get_rt_info)
        self.consumers: list[tuple[Node, int]] = []
        # the descriptor tensor's own (DescriptorTensor): rt_info, value bounds and value symbols
        self.tensor_rt_info: dict[str, Any] = {}
        self.lower_value: Any = None
        self.upper_value: Any = None
        self.value_symbol: list[Any] = []


class OutputTensorInfo:
    """What a node output's tensor is (type, shape, names): shared by :class:`Output` and the descriptor
    tensor (``vinerun.ir.node_api.DescriptorTensor``). Subclasses set ``node`` and ``index``."""

    node: Node
    index: int

    @property
    def _desc(self) -> _OutputDesc:
        return self.node._outputs[self.index]

    def get_element_type(self) -> Type:
        return self._desc.element_type

    element_type = property(get_element_type)

    def get_partial_shape(self) -> PartialShape:
        return self._desc.partial_shape

    partial_shape = property(get_partial_shape)

    def get_shape(self) -> Shape:
        return self._desc.partial_shape.to_shape()

    shape = property(get_shape)

    def get_names(self) -> set[str]:
        return self.node._output_names(self.index)


class Output(OutputTensorInfo):
    """openvino.Output represents port/node output."""

    # no __slots__: as OpenVINO's, a handle takes user attributes (``out._flag = True``)

    def __init__(self, node: Node, index: int):
        self.node = node
        self.index = index

    @classmethod
    def _from_node(cls, node: Node) -> Output:
        """Output 0 of ``node``."""
        return cls(node, 0)

    def get_node(self) -> Node:
        return self.node

    def get_index(self) -> int:
        return self.index

    names = property(OutputTensorInfo.get_names)

    def get_any_name(self) -> str:
        names = self.get_names()
        if not names:
            raise RuntimeError(f"Output {self.index} of node '{self.node.friendly_name}' has no tensor name")
        return min(names)

    any_name = property(get_any_name)

    def set_names(self, names: set[str] | Sequence[str]) -> None:
        self.node._set_output_names(self.index, set(names))

    def add_names(self, names: set[str] | Sequence[str]) -> None:
        self.node._set_output_names(self.index, self.get_names() | set(names))

    def get_rt_info(self) -> RTMap:
        return RTMap(self._desc.rt_info)

    rt_info = property(get_rt_info)

    def set_rt_info(self, value: Any, key: str) -> None:
        self.get_rt_info()[key] = value

    def get_tensor(self) -> Any:
        """The descriptor tensor of this output (type, shape, names, value bounds)."""
        from vinerun.ir.node_api import DescriptorTensor

        return DescriptorTensor(self.node, self.index)

    tensor = property(get_tensor)

    def get_target_inputs(self) -> set[Input]:
        return {Input(n, i) for n, i in self._desc.consumers}

    target_inputs = property(get_target_inputs)

    def remove_target_input(self, target_input: Input) -> None:
        """Forget that ``target_input`` reads this output (the input itself is left as is)."""
        try:
            self._desc.consumers.remove((target_input.node, target_input.index))
        except ValueError:
            pass

    def replace(self, replacement: Output) -> None:
        """Make every consumer of this output read ``replacement`` instead; ``replacement`` takes this
        output's tensor names too (as OpenVINO's ``Output::replace``)."""
        for node, i in list(self._desc.consumers):
            if node is not replacement.node:
                node.set_argument(i, replacement)
        names = self.get_names()
        if names:
            replacement.node._set_output_names(replacement.index, replacement.get_names() | names)

    def _key(self) -> tuple[int, int]:
        return (self.node._id, self.index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Output) and other.node is self.node and other.index == self.index

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __lt__(self, other: Output) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Output) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: Output) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: Output) -> bool:
        return self._key() >= other._key()

    def __hash__(self) -> int:
        return hash((id(self.node), self.index))

    def __copy__(self) -> Output:
        return type(self)(self.node, self.index)

    def __deepcopy__(self, memo: dict) -> Output:
        raise TypeError(f"Cannot deepcopy 'openvino.{type(self).__name__}' object.")

    def __repr__(self) -> str:
        names = ", ".join(sorted(self.get_names()))
        return (f"<{type(self).__name__}: names[{names}] shape{self.partial_shape} "
                f"type: {self.element_type.get_type_name()}>")


class ConstOutput(Output):
    """openvino.ConstOutput represents port/node output."""


class Input:
    """A handle to input ``index`` of ``node``."""

    __slots__ = ("node", "index")

    def __init__(self, node: Node, index: int):
        self.node = node
        self.index = index

    def get_node(self) -> Node:
        return self.node

    def get_index(self) -> int:
        return self.index

    def get_source_output(self) -> Output:
        return self.node._inputs[self.index]

    def replace_source_output(self, new_source: Output) -> None:
        self.node.set_argument(self.index, new_source)

    def get_element_type(self) -> Type:
        return self.get_source_output().element_type

    def get_partial_shape(self) -> PartialShape:
        return self.get_source_output().partial_shape

    def get_shape(self) -> Shape:
        return self.get_source_output().shape

    def get_rt_info(self) -> RTMap:
        return RTMap(self.node._input_rt_info.setdefault(self.index, {}))

    rt_info = property(get_rt_info)

    def set_rt_info(self, value: Any, key: str) -> None:
        self.get_rt_info()[key] = value

    def get_tensor(self) -> Any:
        """The descriptor tensor of the output this input reads."""
        return self.get_source_output().get_tensor()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Input) and other.node is self.node and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.node), self.index))

    def __repr__(self) -> str:
        src = self.get_source_output()
        shape = "[?]" if src is None else src.partial_shape  # as OpenVINO: the shape and type it reads
        et = "dynamic" if src is None else src.element_type.get_type_name()
        return f"<Input: shape{shape} type: {et}>"


def as_output(value: Any) -> Output:
    """Accept an Output, a single-output Node, or a constant-like value (made into a Constant)."""
    if isinstance(value, Output):
        return value
    if isinstance(value, Node):
        if value.get_output_size() != 1:
            raise ValidationError(
                f"Node '{value.friendly_name}' ({value.type_name}) has {value.get_output_size()} outputs; "
                "pass one of them, e.g. node.output(0)")
        return value.output(0)
    from vinerun.ir.core_ops import Constant  # constants from plain values

    return Constant(np.asarray(value)).output(0)


class Node:
    """Base class of every op. Subclasses set ``type_name``, ``version`` and ``num_inputs``.

    >>> class Relu(Node):
    ...     type_name, version, num_inputs = "Relu", "opset1", (1, 1)
    ...     def evaluate(self, inputs): return [np.maximum(inputs[0], 0)]
    """

    type_name: ClassVar[str] = ""
    version: ClassVar[str] = "opset1"
    num_inputs: ClassVar[tuple[int, int]] = (0, 1 << 30)  # (min, max) inputs
    num_outputs: ClassVar[int] = 1
    _attr_specs: ClassVar[dict[str, Attr]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "evaluate" in cls.__dict__:
            from vinerun.ir.node_api import dual_evaluate

            cls.evaluate = dual_evaluate(cls.__dict__["evaluate"])  # also OpenVINO's evaluate(outputs, inputs)
        specs: dict[str, Attr] = {}
        for base in reversed(cls.__mro__):
            for k, v in vars(base).items():
                if isinstance(v, Attr):
                    specs[k] = v
        cls._attr_specs = specs

    def __init__(self, *args: Any, name: str | None = None, **attrs: Any):
        self._id = next(_ids)
        self._inputs: list[Output] = []
        self._outputs: list[_OutputDesc] = []
        self._attrs: dict[str, Any] = {}
        self._input_rt_info: dict[int, dict[str, Any]] = {}
        self._friendly_name = name
        self.rt_info: dict[str, Any] = {}
        unknown = set(attrs) - set(self._attr_specs)
        if unknown:
            raise ValidationError(f"{self.type_name}: unknown attribute(s) {sorted(unknown)}; "
                                  f"known: {sorted(self._attr_specs)}")
        for k, v in attrs.items():
            setattr(self, k, v)
        missing = [k for k, s in self._attr_specs.items() if s.default is Attr.REQUIRED and k not in self._attrs]
        if missing:
            raise ValidationError(f"{self.type_name} '{self.friendly_name}': missing attribute(s) {missing}")
        one_list = len(args) == 1 and isinstance(args[0], (list, tuple)) and not self._takes_list()
        inputs = list(args[0]) if one_list else list(args)
        lo, hi = self.num_inputs
        if not lo <= len(inputs) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise ValidationError(f"{self.type_name} '{self.friendly_name}' takes {want} inputs, got {len(inputs)}")
        for i, v in enumerate(inputs):
            out = as_output(v) if v is not None else None
            self._inputs.append(out)  # type: ignore[arg-type]
            if out is not None:
                out._desc.consumers.append((self, i))
        self.set_output_size(self.num_outputs)
        self.validate_and_infer_types()

    @classmethod
    def _takes_list(cls) -> bool:
        return False

    # --- identity ----------------------------------------------------------------------
    def get_type_name(self) -> str:
        return self.type_name

    def get_type_info(self) -> DiscreteTypeInfo:
        return DiscreteTypeInfo(self.type_name, self.version)

    type_info = property(get_type_info)

    def get_name(self) -> str:
        return f"{self.type_name}_{self._id}"

    name = property(get_name)

    def get_friendly_name(self) -> str:
        return self._friendly_name if self._friendly_name is not None else self.get_name()

    def set_friendly_name(self, name: str) -> None:
        self._friendly_name = name

    friendly_name = property(get_friendly_name, set_friendly_name)

    def get_rt_info(self) -> RTMap:
        return RTMap(self.rt_info)

    def get_instance_id(self) -> int:
        return self._id

    # --- attributes --------------------------------------------------------------------
    def get_attributes(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._attr_specs}

    def set_attribute(self, name: str, value: Any) -> None:
        if name not in self._attr_specs:
            raise ValidationError(f"{self.type_name} has no attribute '{name}'")
        setattr(self, name, value)

    # --- inputs ------------------------------------------------------------------------
    def get_input_size(self) -> int:
        return len(self._inputs)

    def input(self, i: int) -> Input:
        return Input(self, i)

    def inputs(self) -> list[Input]:
        return [Input(self, i) for i in range(len(self._inputs))]

    def input_value(self, i: int) -> Output:
        return self._inputs[i]

    def input_values(self) -> list[Output]:
        return list(self._inputs)

    def get_input_element_type(self, i: int) -> Type:
        return self._inputs[i].element_type

    def get_input_partial_shape(self, i: int) -> PartialShape:
        return self._inputs[i].partial_shape

    def get_input_shape(self, i: int) -> Shape:
        return self._inputs[i].shape

    def has_input(self, i: int) -> bool:
        return i < len(self._inputs) and self._inputs[i] is not None

    def set_argument(self, i: int, value: Output | Node) -> None:
        new = as_output(value)
        old = self._inputs[i]
        if old is not None:
            try:
                old._desc.consumers.remove((self, i))
            except ValueError:
                pass
        self._inputs[i] = new
        new._desc.consumers.append((self, i))

    def set_arguments(self, values: Sequence[Output | Node]) -> None:
        for i, v in enumerate(values):
            self.set_argument(i, v)

    def detach(self) -> None:
        """Drop this node from its producers' consumer lists (when removing it from a graph)."""
        for i, src in enumerate(self._inputs):
            if src is not None:
                try:
                    src._desc.consumers.remove((self, i))
                except ValueError:
                    pass

    def const_input(self, i: int) -> np.ndarray | None:
        """The value of input ``i`` if it comes from a Constant, else None (for shape inference)."""
        if i >= len(self._inputs) or self._inputs[i] is None:
            return None
        src = self._inputs[i].node
        return src.get_value() if src.type_name == "Constant" else None

    # --- outputs -----------------------------------------------------------------------
    def get_output_size(self) -> int:
        return len(self._outputs)

    def set_output_size(self, n: int) -> None:
        while len(self._outputs) < n:
            self._outputs.append(_OutputDesc())
        del self._outputs[n:]

    def output(self, i: int) -> Output:
        if not 0 <= i < len(self._outputs):
            raise IndexError(f"{self.type_name} '{self.friendly_name}' has no output {i}")
        return Output(self, i)

    def outputs(self) -> list[Output]:
        return [Output(self, i) for i in range(len(self._outputs))]

    def get_output_element_type(self, i: int) -> Type:
        return self._outputs[i].element_type

    def get_output_partial_shape(self, i: int) -> PartialShape:
        return self._outputs[i].partial_shape

    def get_output_shape(self, i: int) -> Shape:
        return self._outputs[i].partial_shape.to_shape()

    def get_element_type(self) -> Type:
        return self.get_output_element_type(0)

    def get_output_tensor(self, i: int) -> Any:
        from vinerun.ir.node_api import DescriptorTensor

        return DescriptorTensor(self, i)

    def get_input_tensor(self, i: int) -> Any:
        from vinerun.ir.node_api import DescriptorTensor

        src = self._inputs[i]
        return DescriptorTensor(src.node, src.index)

    @property
    def shape(self) -> Shape:
        return self.get_output_shape(0)

    def set_output_type(self, i: int, element_type: Type, shape: Any) -> None:
        if i >= len(self._outputs):
            self.set_output_size(i + 1)
        self._outputs[i].element_type = Type(element_type)
        self._outputs[i].partial_shape = as_partial_shape(shape)

    def _output_names(self, i: int) -> set[str]:
        return self._outputs[i].names

    def _set_output_names(self, i: int, names: set[str]) -> None:
        self._outputs[i].names = set(names)

    # --- semantics (overridden by ops) --------------------------------------------------
    def infer(self) -> list[tuple[Type, PartialShape]]:
        """Output (element type, shape) pairs. Default: input 0's type, dynamic shape."""
        et = self._inputs[0].element_type if self._inputs and self._inputs[0] is not None else Type.dynamic
        return [(et, PartialShape.dynamic())] * self.num_outputs

    def evaluate(self, inputs: list[Any]) -> list[Any]:
        """The NumPy reference: input arrays in, output arrays out."""
        from vinerun.errors import UnsupportedOpError

        raise UnsupportedOpError(f"{self.type_name} '{self.friendly_name}' has no reference implementation")

    def subgraphs(self) -> list[Any]:
        """Bodies (Models) held by control-flow ops."""
        out = []
        for k, spec in self._attr_specs.items():
            v = getattr(self, k)
            if spec.kind == "model" and v is not None:
                out.append(v)
            elif spec.kind == "models" and v:
                out.extend(v)
        return out

    def validate_and_infer_types(self) -> None:
        try:
            results = self.infer()
        except ValidationError as e:
            if self.friendly_name in str(e):
                raise
            raise ValidationError(f"{self.type_name} '{self.friendly_name}': {e}") from e
        except (ValueError, IndexError, TypeError, KeyError) as e:
            raise ValidationError(f"{self.type_name} '{self.friendly_name}': {e}") from e
        self.set_output_size(len(results))
        for i, (et, ps) in enumerate(results):
            self._outputs[i].element_type = Type(et)
            self._outputs[i].partial_shape = as_partial_shape(ps)

    constructor_validate_and_infer_types = validate_and_infer_types

    def clone_with_new_inputs(self, new_inputs: Sequence[Output]) -> Node:
        node = type(self).__new__(type(self))
        Node._init_clone(node, self, new_inputs)
        return node

    @staticmethod
    def _init_clone(node: Node, src: Node, new_inputs: Sequence[Output]) -> None:
        node._id = next(_ids)
        node._inputs = []
        node._outputs = []
        node._attrs = dict(src._attrs)
        node._input_rt_info = {k: dict(v) for k, v in src._input_rt_info.items()}
        node._friendly_name = src._friendly_name
        node.rt_info = dict(src.rt_info)
        for k, v in src.__dict__.items():
            if k not in node.__dict__:
                node.__dict__[k] = v
        for i, v in enumerate(new_inputs):
            out = as_output(v) if v is not None else None
            node._inputs.append(out)
            if out is not None:
                out._desc.consumers.append((node, i))
        node.set_output_size(len(src._outputs))
        node.validate_and_infer_types()
        for i, d in enumerate(src._outputs):
            if i < len(node._outputs):
                node._outputs[i].names = set(d.names)
                node._outputs[i].rt_info = dict(d.rt_info)

    def __repr__(self) -> str:
        outs = ", ".join(f"{o.element_type.get_type_name()}{o.partial_shape}" for o in self._outputs)
        return f"<{self.type_name}: '{self.friendly_name}' ({outs})>"

    # --- OpenVINO's Python operators: ``a + b`` builds an Add node, ``2 * a`` a Multiply ... ----------
    __array_ufunc__ = None  # ``ndarray + node`` defers to ``node.__radd__`` instead of looping elementwise

    def __add__(self, other: Any) -> Node:
        return _binary("Add", self, other)

    def __radd__(self, other: Any) -> Node:
        return _binary("Add", other, self)

    def __sub__(self, other: Any) -> Node:
        return _binary("Subtract", self, other)

    def __rsub__(self, other: Any) -> Node:
        return _binary("Subtract", other, self)

    def __mul__(self, other: Any) -> Node:
        return _binary("Multiply", self, other)

    def __rmul__(self, other: Any) -> Node:
        return _binary("Multiply", other, self)

    def __truediv__(self, other: Any) -> Node:
        return _binary("Divide", self, other)

    def __rtruediv__(self, other: Any) -> Node:
        return _binary("Divide", other, self)


from vinerun.ir.node_api import dual_evaluate as _dual_evaluate  # noqa: E402  (node_api needs no Node at import)

Node.evaluate = _dual_evaluate(Node.evaluate)  # type: ignore[method-assign]  # ops without a reference: False


class DiscreteTypeInfo:
    """An op's type identity (``node.get_type_info()``): ``name``, ``version_id`` and ``parent``."""

    __slots__ = ("name", "version_id", "parent")

    def __init__(self, name: str, version_id: str, parent: DiscreteTypeInfo | None = None):
        self.name = name
        self.version_id = version_id
        self.parent = parent

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DiscreteTypeInfo) and other.name == self.name
                and other.version_id == self.version_id)

    def __hash__(self) -> int:
        return hash((self.name, self.version_id))

    def __repr__(self) -> str:
        return f"<DiscreteTypeInfo: {self.name} v{self.version_id.removeprefix('opset')}>"


def _binary(type_name: str, lhs: Any, rhs: Any) -> Node:
    """An elementwise node from two operands; non-node operands become Constants of their NumPy type."""
    from vinerun.ir.registry import get_op_class

    if isinstance(lhs, Output) or isinstance(rhs, Output):
        return NotImplemented  # OpenVINO defines these operators on nodes only
    return get_op_class(type_name)(as_output(lhs), as_output(rhs))


def broadcast_shapes(a: PartialShape, b: PartialShape, what: str = "inputs") -> PartialShape:
    """NumPy-style broadcast of two partial shapes; raises ValidationError if incompatible."""
    if a.rank.is_dynamic or b.rank.is_dynamic:
        return PartialShape.dynamic()
    da, db = list(a), list(b)
    n = max(len(da), len(db))
    from vinerun.ir.shape import Dimension

    da = [Dimension(1)] * (n - len(da)) + da
    db = [Dimension(1)] * (n - len(db)) + db
    out = []
    for x, y in zip(da, db, strict=True):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x.is_static and y.is_static:
            if x != y:
                raise ValidationError(f"Argument shapes are inconsistent: {what} shapes {a} and {b} cannot be "
                                      "broadcast together")
            out.append(x)
        else:
            m = x.merge(y)
            out.append(m if m is not None and (x.is_static or y.is_static) else Dimension())
    return PartialShape(out)
