"""What every device's kernel package shares: a table of kernel factories by op type, filled by a decorator from
modules imported on first use, and the error a failing kernel raises (naming its node)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from vinerun.errors import InferenceError, VinerunError
from vinerun.ir.node import Node


class KernelRegistry:
    """Op type -> kernel factories, in registration order; ``package``'s modules (not ``_private`` ones) are
    imported on the first lookup, each registering its factories with :meth:`kernel`."""

    def __init__(self, package: str, path: list[str]):
        self.package, self.path = package, path
        self.factories: dict[str, list[Callable[..., Any]]] = {}
        self._loaded = False

    def kernel(self, *type_names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator registering a kernel factory for the given op type names."""

        def deco(factory: Callable[..., Any]) -> Callable[..., Any]:
            for t in type_names:
                self.factories.setdefault(t, []).append(factory)
            return factory

        return deco

    def for_type(self, type_name: str) -> list[Callable[..., Any]]:
        if not self._loaded:
            self._loaded = True
            for m in sorted(pkgutil.iter_modules(self.path), key=lambda m: m.name):
                if not m.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{m.name}")
        return self.factories.get(type_name, [])


def node_error(node: Node, e: Exception, device: str = "") -> Exception:
    """``e`` with the failing node named (a VinerunError keeps its type)."""
    if isinstance(e, VinerunError):
        if f"'{node.friendly_name}'" in str(e):
            return e
        return type(e)(f"{node.type_name} '{node.friendly_name}': {e}")
    where = f" on {device}" if device else ""
    return InferenceError(f"{node.type_name} '{node.friendly_name}' failed{where}: {type(e).__name__}: {e}")
