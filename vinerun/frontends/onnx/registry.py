"""Translators from ONNX nodes to vinerun ops, registered with ``@onnx_op``.

A translator receives a :class:`~vinerun.frontends.onnx.context.NodeContext` and returns the
node's outputs (one ``Output`` per ONNX output; ``None`` for an output it does not produce).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Translator = Callable[[Any], Any]
_TRANSLATORS: dict[tuple[str, str], list[tuple[int, Translator]]] = {}


def onnx_op(op_type: str, domain: str = "", since: int = 1) -> Callable[[Translator], Translator]:
    """Register a translator for ``op_type`` in ``domain`` from opset ``since`` on.

    Several translators for one op may be registered with different ``since`` versions;
    the newest one not newer than the model's opset is used.
    """

    def deco(fn: Translator) -> Translator:
        key = ("ai.onnx" if domain in ("", "ai.onnx") else domain, op_type)
        entries = _TRANSLATORS.setdefault(key, [])
        entries.append((since, fn))
        entries.sort(key=lambda e: e[0])
        return fn

    return deco


def find_translator(domain: str, op_type: str, opset: int) -> Translator | None:
    _load_all()
    key = ("ai.onnx" if domain in ("", "ai.onnx") else domain, op_type)
    found = None
    for since, fn in _TRANSLATORS.get(key, []):
        if since <= opset:
            found = fn
    return found


def known_ops() -> list[tuple[str, str]]:
    _load_all()
    return sorted(_TRANSLATORS)


def _load_all() -> None:
    import vinerun.frontends.onnx.translators  # noqa: F401
