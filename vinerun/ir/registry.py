"""The op registry: every op class registers itself with ``@register_op``.

Ops are looked up by (type name, version), as OpenVINO IR files name them
(``<layer type="Convolution" version="opset1">``), and by type name alone (newest version).
"""

from __future__ import annotations

from typing import TypeVar

from vinerun.errors import UnsupportedOpError

_T = TypeVar("_T", bound=type)
_OPS: dict[tuple[str, str], type] = {}


def _opset_number(version: str) -> int:
    digits = "".join(ch for ch in version if ch.isdigit())
    return int(digits) if version.startswith("opset") and digits else 0


def register_op(cls: _T) -> _T:
    """Class decorator: make ``cls`` findable by its ``type_name`` and ``version``."""
    key = (cls.type_name, cls.version)  # type: ignore[attr-defined]
    if key in _OPS and _OPS[key] is not cls:
        raise RuntimeError(f"op {key} registered twice: {_OPS[key]} and {cls}")
    _OPS[key] = cls
    return cls


def get_op_class(type_name: str, version: str | None = None) -> type:
    """The class for ``type_name``; with ``version`` the exact one, else the newest."""
    _load_all()
    if version is not None:
        cls = _OPS.get((type_name, version))
        if cls is not None:
            return cls
        # IR files may name an older opset than the one that introduced the class's version:
        # pick the newest registered version not newer than the requested opset.
        n = _opset_number(version)
        cands = [(v, c) for (t, v), c in _OPS.items() if t == type_name and (n == 0 or _opset_number(v) <= n)]
        if cands:
            return max(cands, key=lambda vc: _opset_number(vc[0]))[1]
        raise UnsupportedOpError(f"Operation {type_name} (version {version}) is not supported by vinerun")
    cands = [(v, c) for (t, v), c in _OPS.items() if t == type_name]
    if not cands:
        raise UnsupportedOpError(f"Operation {type_name} is not supported by vinerun")
    return max(cands, key=lambda vc: _opset_number(vc[0]))[1]


def all_ops() -> dict[tuple[str, str], type]:
    _load_all()
    return dict(_OPS)


def _load_all() -> None:
    import vinerun.ops  # noqa: F401  (importing the package registers every op module)
