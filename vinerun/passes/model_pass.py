"""The base classes of OpenVINO-style passes: :class:`PassBase` (a name) and :class:`ModelPass`
(``run_on_model(model) -> bool``, overridden by user passes)."""

from __future__ import annotations

from typing import Any


class PassBase:
    """Anything a :class:`~vinerun.passes.Manager` can run; has a name."""

    def __init__(self) -> None:
        self._name: str | None = None

    def get_name(self) -> str:
        name = getattr(self, "_name", None)
        return name if name is not None else type(self).__name__

    def set_name(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.get_name()}>"


class ModelPass(PassBase):
    """A pass over a whole model. Subclasses implement ``run_on_model(model)`` and return whether they
    changed it."""

    def run_on_model(self, model: Any) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement run_on_model(model)")
