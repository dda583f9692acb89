"""Pass infrastructure: a pass declares its contract and the infrastructure enforces it.

A pass subclasses :class:`InPlacePass` (edits the model it is given and returns it) or
:class:`FunctionalPass` (returns a new model and leaves its input untouched), implements
:meth:`ModelPass.call` returning ``PassResult(model, modified)``, and may state
:meth:`ModelPass.requires` (preconditions) and :meth:`ModelPass.ensures` (postconditions).
Calling the pass checks all of it; a broken promise raises :class:`PassContractError` with a
message that tells the pass author what to fix (after onnx-ir's ``_pass_infra``).
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vinerun.errors import VinerunError
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model, node_control_deps
from vinerun.ir.node import Node

logger = logging.getLogger(__name__)


class PassContractError(VinerunError):
    """A pass broke its declared contract (a bug in the pass, not in the model)."""


class PreconditionError(PassContractError):
    """The model does not meet what a pass ``requires``."""


class PostconditionError(PassContractError):
    """A pass did not deliver what it ``ensures``."""


@dataclass
class PassResult:
    """What a pass returns: the resulting ``model`` and whether it differs from the input."""

    model: Model
    modified: bool


def reachable(model: Model) -> list[Node]:
    """Every node the model's results and sinks depend on (any order; cheaper than a topological sort)."""
    seen: set[int] = set()
    out: list[Node] = []
    stack: list[Node] = [*model.get_results(), *model.get_sinks(), *model.get_parameters()]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        stack.extend(o.node for o in node._inputs if o is not None and id(o.node) not in seen)
        stack.extend(node_control_deps(node))
    return out


def graph_checks() -> bool:
    """Whether passes compare the graph before and after them (``modified`` and ``changes_input`` kept): where
    ``VINERUN_CHECK_PASSES=1`` (the test suite sets it). Each comparison walks the whole graph, twice per pass:
    a third of compiling PP-OCR's recogniser or a BERT (0.30 -> 0.19 s, 0.42 -> 0.29 s)."""
    return os.environ.get("VINERUN_CHECK_PASSES") == "1"


def fingerprint(model: Model) -> tuple[Any, ...]:
    """The graph's structure: its nodes, their input edges and the model's ports (not attributes)."""
    nodes = frozenset((id(n), *[None if o is None else (id(o.node), o.index) for o in n._inputs])
                      for n in reachable(model))
    ports = tuple(tuple(id(x) for x in xs) for xs in (model.get_parameters(), model.get_results(), model.get_sinks()))
    return nodes, ports


class ModelPass(ABC):
    """Base of every pass. Subclass :class:`InPlacePass` or :class:`FunctionalPass`.

    >>> class DropNothing(InPlacePass):
    ...     def call(self, model): return PassResult(model, modified=False)
    >>> DropNothing()(model).modified
    False
    """

    #: True: the pass edits and returns its input model; False: it returns a new model
    in_place: bool = True
    #: whether the input model may change (always True for in-place passes)
    changes_input: bool = True
    #: compare the graph before and after to check ``modified`` and ``changes_input``
    check_graph: bool = True

    @property
    def name(self) -> str:
        return type(self).__name__

    @abstractmethod
    def call(self, model: Model) -> PassResult:
        """Transform ``model``; return ``PassResult(model, modified)``."""

    def requires(self, model: Model) -> None:
        """Raise if ``model`` is not something this pass can work on."""
        del model  # no precondition by default

    def ensures(self, model: Model) -> None:
        """Raise if the resulting ``model`` lacks what this pass promises."""
        del model  # no postcondition by default

    def __call__(self, model: Model | PassResult) -> PassResult:
        return self.run(model.model if isinstance(model, PassResult) else model, self.check_graph)

    def run(self, model: Model, check_graph: bool = True) -> PassResult:
        """Run with every check; ``check_graph=False`` skips the before/after graph comparison."""
        try:
            self.requires(model)
        except PassContractError:
            raise
        except Exception as e:
            raise PreconditionError(f"Pass '{self.name}' cannot run on model '{model.friendly_name}': {e}") from e
        before = fingerprint(model) if check_graph and graph_checks() else None
        result = self.call(model)
        self._check_result(model, before, result)
        try:
            self.ensures(result.model)
        except PassContractError:
            raise
        except Exception as e:
            raise PostconditionError(f"Pass '{self.name}' did not deliver its postcondition on model "
                                     f"'{model.friendly_name}': {e}. Pass author: fix call() or ensures().") from e
        logger.debug("pass %s: modified=%s", self.name, result.modified)
        return result

    def _check_result(self, model: Model, before: tuple[Any, ...] | None, result: Any) -> None:
        fix = f"Pass author: fix {self.name}"
        if not isinstance(result, PassResult):
            raise PassContractError(f"Pass '{self.name}' returned {type(result).__name__}, not a PassResult. "
                                    f"{fix}.call() to return PassResult(model, modified).")
        if self.in_place and result.model is not model:
            raise PassContractError(f"Pass '{self.name}' is declared in place but returned another model. "
                                    f"{fix}.call() to return the model it was given, or derive from FunctionalPass.")
        if not self.in_place and result.model is model:
            raise PassContractError(f"Pass '{self.name}' is declared functional (not in place) but returned its "
                                    f"input model. {fix}.call() to work on model.clone(), or derive from InPlacePass.")
        if before is None:
            return
        if not self.changes_input and fingerprint(model) != before:
            raise PassContractError(f"Pass '{self.name}' promises not to change its input, but the input model "
                                    f"'{model.friendly_name}' changed. {fix}.call() to edit a clone.")
        if not result.modified and fingerprint(result.model) != before:
            raise PassContractError(f"Pass '{self.name}' reported modified=False but changed the graph of "
                                    f"'{model.friendly_name}'. {fix}.call() to report modified=True.")

    def __repr__(self) -> str:
        return f"{self.name}()"


class InPlacePass(ModelPass):
    """A pass that edits the model it is given and returns it."""

    in_place = True
    changes_input = True


class ReplaceMatches(InPlacePass):
    """Replace every match of a pattern with the node ``make_fused(match)`` returns (None: leave it alone).

    Subclasses say how a match is found (``match``) and which nodes it covers (``covered``: the last one,
    whose tensor names the fused node takes, and every node to remove).

    >>> ConvFusion(lambda chain: MyFusedConv(chain))(model).modified
    True
    """

    def __init__(self, make_fused: Callable[[Any], Node | None]):
        self.make_fused = make_fused

    @abstractmethod
    def match(self, node: Node) -> Any | None:
        """The match that starts (or ends) at ``node``, or None."""

    @abstractmethod
    def covered(self, match: Any) -> tuple[Node, list[Node]]:
        """(the node whose output the fused node replaces, every node of the match)."""

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = self.match(node)
            if found is None:
                continue
            fused = self.make_fused(found)
            if fused is None:
                continue
            last, nodes = self.covered(found)
            replace_output_update_name(last.output(0), fused.output(0))
            for n in nodes:
                n.detach()
            modified = True
        return PassResult(model, modified)


class FunctionalPass(ModelPass):
    """A pass that returns a new model and leaves its input as it was."""

    in_place = False
    changes_input = False


class PassManager(ModelPass):
    """Runs passes in order, ``steps`` times or until nothing changes (``early_stop``).

    >>> manager = PassManager([ConstantFolding(), DeadCodeElimination()])
    >>> result = manager(model)
    >>> result.modified
    True

    OpenVINO's spelling works too: ``manager.register_pass(p)``, ``manager.run_passes(model)``.
    """

    def __init__(self, passes: Sequence[ModelPass] = (), steps: int = 1, early_stop: bool = True,
                 check_graph: bool = True):
        self.passes: list[ModelPass] = list(passes)
        #: whether each pass's graph promises are checked (the manager's own are its passes')
        self.check_passes = check_graph
        self.check_graph = False
        self.steps = steps
        self.early_stop = early_stop

    @property  # type: ignore[override]
    def in_place(self) -> bool:
        return all(p.in_place for p in self.passes)

    @property  # type: ignore[override]
    def changes_input(self) -> bool:
        return bool(self.passes) and (self.passes[0].in_place or self.passes[0].changes_input)

    def register_pass(self, pass_: ModelPass) -> ModelPass:
        self.passes.append(pass_)
        return pass_

    def run_passes(self, model: Model) -> bool:
        """Run every pass in place on ``model`` (they must all be in place); returns ``modified``."""
        if not self.in_place:
            raise PassContractError("run_passes edits the model in place; these passes are not in place: "
                                    f"{[p.name for p in self.passes if not p.in_place]}. Use manager(model).model")
        return self(model).modified

    def call(self, model: Model) -> PassResult:
        modified = False
        for step in range(self.steps):
            changed = False
            for i, pass_ in enumerate(self.passes):
                try:
                    result = pass_.run(model, self.check_passes and pass_.check_graph)
                except Exception as e:
                    e.add_note(f"in pass '{pass_.name}' (step {step}, after {[p.name for p in self.passes[:i]]})")
                    raise
                model, changed = result.model, changed or result.modified
            modified = modified or changed
            if not changed and self.early_stop:
                break
        return PassResult(model, modified)

    def __repr__(self) -> str:
        return f"PassManager({self.passes!r}, steps={self.steps})"


def pass_fn(fn: Callable[[Model], bool]) -> InPlacePass:
    """Make an in-place pass from ``fn(model) -> modified``.

    >>> @pass_fn
    ... def rename(model): model.friendly_name = "renamed"; return False
    """

    class _FnPass(InPlacePass):
        def call(self, model: Model) -> PassResult:
            return PassResult(model, bool(fn(model)))

        @property
        def name(self) -> str:
            return fn.__name__

    return _FnPass()
