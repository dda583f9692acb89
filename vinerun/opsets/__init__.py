"""OpenVINO-style op builders by opset: ``from vinerun import opset13 as ops``.

Opset ``N`` holds, for every op type vinerun registers with a version ``opsetK`` (``K <= N``),
a builder for the newest such version. Builders are generated from the op registry
(:mod:`vinerun.opsets._factory`), so new ops appear without editing a list; the few whose
OpenVINO signatures differ are written by hand (:mod:`vinerun.opsets._custom`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vinerun.ir.registry import all_ops
from vinerun.opsets._factory import OpFactory, python_name
from vinerun.opsets._ov_names import ALIASES

LATEST = 16
_TABLES: dict[int, dict[str, Callable[..., Any]]] = {}


def _opset_number(version: str) -> int | None:
    if not version.startswith("opset"):
        return None
    digits = version[len("opset"):]
    return int(digits) if digits.isdigit() else None


def opset_table(n: int) -> dict[str, Callable[..., Any]]:
    """Every builder of opset ``n``, by OpenVINO's function name."""
    if n in _TABLES:
        return _TABLES[n]
    from vinerun.opsets._custom import CUSTOM, CUSTOM_SINCE

    newest: dict[str, tuple[int, type]] = {}
    for (type_name, version), cls in all_ops().items():
        k = _opset_number(version)
        if k is None or k > n or type_name in ("Parameter", "Constant", "Result"):
            continue
        if type_name not in newest or newest[type_name][0] < k:
            newest[type_name] = (k, cls)
    table: dict[str, Callable[..., Any]] = {python_name(t): OpFactory(c) for t, (_, c) in sorted(newest.items())}
    table.update({k: f for k, f in CUSTOM.items() if CUSTOM_SINCE[k] <= n})
    table.update({alias: table[target] for alias, target in ALIASES.items() if target in table})
    _TABLES[n] = table
    return table


def module_hooks(n: int) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the module ``vinerun.opsetN``."""

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return sorted(opset_table(n))
        try:
            return opset_table(n)[name]
        except KeyError:
            raise AttributeError(f"module 'vinerun.opset{n}' has no attribute '{name}'") from None

    def __dir__() -> list[str]:
        return sorted(opset_table(n))

    return __getattr__, __dir__


__all__ = ["LATEST", "OpFactory", "module_hooks", "opset_table", "python_name"]
