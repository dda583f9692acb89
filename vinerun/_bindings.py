"""OpenVINO's compiled-binding module ``openvino._pyopenvino`` (importable as ``vinerun._bindings``):
code imports classes from it directly.

Everything the top-level package exports is reachable here too (as in OpenVINO, where the package
re-exports this module's classes); the few classes only this module names are defined beside.
"""

from __future__ import annotations

from typing import Any

from vinerun.ir.node_api import DescriptorTensor


def __getattr__(name: str) -> Any:
    import vinerun

    try:
        return getattr(vinerun, name)
    except AttributeError:
        raise AttributeError(f"module 'vinerun._bindings' has no attribute '{name}'") from None


__all__ = ["DescriptorTensor"]
