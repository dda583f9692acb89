"""OpenVINO's pass ``Manager``: ``register_pass(p)`` then ``run_passes(model)``.

It runs OpenVINO-style passes (:class:`~vinerun.passes.ModelPass` and friends, through
``run_on_model``) and vinerun's own (:class:`vinerun.transformations.ModelPass`, through ``run``) alike.
"""

from __future__ import annotations

from typing import Any

from vinerun.passes.model_pass import PassBase
from vinerun.transformations.pass_infra import ModelPass as VinerunPass


class Manager:
    """Runs registered passes in order on a model, in place."""

    def __init__(self) -> None:
        self._passes: list[Any] = []
        self._per_pass_validation = True

    def register_pass(self, pass_: Any) -> Any:
        """Append ``pass_`` (an instance) and return it."""
        if isinstance(pass_, type):
            pass_ = pass_()
        if not isinstance(pass_, (PassBase, VinerunPass)) and not hasattr(pass_, "run_on_model"):
            raise TypeError(f"register_pass(): expected a pass, got {type(pass_).__name__}")
        self._passes.append(pass_)
        return pass_

    def set_per_pass_validation(self, enabled: bool) -> None:
        """Whether node types are re-inferred after each pass that changed the model."""
        self._per_pass_validation = bool(enabled)

    def run_passes(self, model: Any) -> None:
        for pass_ in self._passes:
            if isinstance(pass_, VinerunPass):
                changed = pass_.run(model, check_graph=False).modified
            else:
                changed = bool(pass_.run_on_model(model))
            if changed and self._per_pass_validation:
                model.validate_nodes_and_infer_types()

    def __repr__(self) -> str:
        return f"<Manager: {[getattr(p, 'get_name', lambda p=p: type(p).__name__)() for p in self._passes]}>"
