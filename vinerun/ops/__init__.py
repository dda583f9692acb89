"""Operations: one module per op or small family; importing this package registers them all.

Each op class declares attributes (``Attr``), infers output types (``infer``) and computes a NumPy
reference (``evaluate``). Modules are discovered automatically: add a file, it is registered.
"""

import importlib
import pkgutil

from vinerun.ir.core_ops import Constant, Parameter, Result

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")

__all__ = ["Constant", "Parameter", "Result"]
