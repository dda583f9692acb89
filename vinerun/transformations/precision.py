"""Precision lowering: the ops a device computes faster in a narrower float type (bf16) run in it.

After OpenVINO's ``EnforceInferencePrecision`` / ``ConvertPrecision``. A device states a
:class:`PrecisionPolicy`: *anchors*, the ops worth lowering on their own (convolutions, matrix products,
attention), and *followers*, ops that stay in the narrow type when one of their float inputs already is
(element-wise ops, pooling, views), so that a chain of lowered ops never goes back to f32 in between.
:class:`EnforceInferencePrecision` then, in one walk in topological order:

- gives each lowered node its ``source``-typed inputs in the ``target`` type: a Constant is converted once,
  here (a new Constant, so that other readers keep theirs); any other value goes through one shared
  ``Convert``; inputs the policy keeps wide (a bias, normalization scales: their kernels read them in f32)
  stay as they are;
- re-infers the lowered node's outputs (they follow their inputs: the narrow type);
- converts a lowered value back to its original type, once, for the readers that are not lowered, and for
  the model's outputs, which keep their declared element types (a Convert before each such Result, holding
  the tensor names).

Only the model's own graph is lowered: bodies of control-flow ops keep their types.

>>> policy = PrecisionPolicy(anchors=frozenset({"MatMul"}), followers=frozenset({"Relu"}))
>>> EnforceInferencePrecision(Type.bf16, policy)(model).modified  # doctest: +SKIP
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ir.types import Type
from vinerun.ops.convert import Convert, convert_array
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _no_wide_inputs(node: Node) -> frozenset[int]:
    del node
    return frozenset()


def _any_node(node: Node) -> bool:
    del node
    return True


@dataclass(frozen=True)
class PrecisionPolicy:
    """Which ops a device lowers: ``anchors`` always (when their float inputs are all of the source type),
    ``followers`` when a float input comes from a lowered op; ``wide_inputs(node)`` names the inputs of a lowered
    node that keep their type; ``shape_readers`` read only shapes and take a lowered value as it is; ``accepts``
    vetoes candidates."""

    anchors: frozenset[str]
    followers: frozenset[str] = frozenset()
    wide_inputs: Callable[[Node], frozenset[int]] = _no_wide_inputs
    shape_readers: frozenset[str] = field(default_factory=lambda: frozenset({"ShapeOf"}))
    #: a last say on each candidate (e.g. only shapes a fast kernel takes)
    accepts: Callable[[Node], bool] = _any_node


class EnforceInferencePrecision(InPlacePass):
    """Run the ops ``policy`` picks in ``target`` instead of ``source`` (f32), converting at the borders.

    Postcondition: the model's outputs keep their element types.
    """

    def __init__(self, target: Type, policy: PrecisionPolicy, source: Type = Type.f32):
        self.target, self.policy, self.source = target, policy, source
        self._result_types: list[Type] = []

    def call(self, model: Model) -> PassResult:
        self._result_types = [r.get_output_element_type(0) for r in model.get_results()]
        order = [n for n in model.get_ordered_ops() if not isinstance(n, (Parameter, Constant))]
        original = {id(n): [o.element_type if o is not None else None for o in n.input_values()] for n in order}
        lowered = self._select(order)
        if not lowered:
            return PassResult(model, False)
        converts: dict[tuple[int, int, str], Output] = {}
        constants: dict[int, Output] = {}
        for node in order:
            for i, want in enumerate(self._wanted(node, original[id(node)], lowered)):
                src = node.input_value(i)
                if want is None or src is None or src.element_type == want:
                    continue
                if isinstance(src.node, Constant) and want == self.target:
                    node.set_argument(i, self._narrow_constant(src, constants))
                else:
                    node.set_argument(i, self._convert(src, want, converts, isinstance(node, Result)))
            if id(node) in lowered:
                node.validate_and_infer_types()
        for result in model.get_results():
            result.validate_and_infer_types()
        return PassResult(model, True)

    def ensures(self, model: Model) -> None:
        now = [r.get_output_element_type(0) for r in model.get_results()]
        if now != self._result_types:
            raise ValueError(f"the model's output types changed from {self._result_types} to {now}")

    def _select(self, order: list[Node]) -> set[int]:
        """Ids of the nodes to lower, in topological order: anchors, and followers of lowered values."""
        lowered: set[int] = set()
        for node in order:
            kind = "anchor" if node.type_name in self.policy.anchors else (
                "follower" if node.type_name in self.policy.followers else None)
            if kind is None or isinstance(node, Result) or not self._all_source(node) or not self.policy.accepts(node):
                continue
            if kind == "anchor" or any(o is not None and id(o.node) in lowered and o.element_type.is_real()
                                       for o in node.input_values()):
                lowered.add(id(node))
        return lowered

    def _all_source(self, node: Node) -> bool:
        """Every float input and output of ``node`` has the source type (none is dynamic), and it has a float
        output."""
        types = [o.element_type for o in node.input_values() if o is not None]
        types += [o.element_type for o in node.outputs()]
        floats = [t for t in types if t.is_real()]
        if not floats or any(t.is_dynamic() for t in types) or any(t != self.source for t in floats):
            return False
        return any(o.element_type.is_real() for o in node.outputs())

    def _wanted(self, node: Node, original: list[Type | None], lowered: set[int]) -> list[Type | None]:
        """The element type each input of ``node`` must have after the pass (None: whatever it is)."""
        if node.type_name in self.policy.shape_readers:
            return [None] * len(original)
        if id(node) not in lowered:
            return list(original)
        wide = self.policy.wide_inputs(node)
        return [self.target if t == self.source and i not in wide else t for i, t in enumerate(original)]

    def _narrow_constant(self, src: Output, cache: dict[int, Output]) -> Output:
        """A Constant's value in the target type (one new Constant per original)."""
        out = cache.get(id(src.node))
        if out is None:
            value = convert_array(src.node.get_value(), self.target.to_dtype())
            name = f"{src.node.friendly_name}/{self.target.get_type_name()}"
            out = cache[id(src.node)] = Constant(value, name=name).output(0)
        return out

    def _convert(self, src: Output, want: Type, cache: dict[tuple[int, int, str], Output], to_result: bool) -> Output:
        """``src`` through one shared Convert to ``want``; a Convert feeding a model output takes its names."""
        key = (id(src.node), src.index, want.get_type_name())
        out = cache.get(key)
        if out is None:
            name = f"{src.node.friendly_name}/convert_{want.get_type_name()}"
            out = cache[key] = Convert(src, destination_type=want, name=name).output(0)
        if to_result and src.get_names() and not out.get_names():
            out.set_names(src.get_names())
            src.set_names(set())
        return out
