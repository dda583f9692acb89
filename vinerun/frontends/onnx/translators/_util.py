"""Helpers shared by the element-wise translators."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output
from vinerun.ops.convert import ConvertLike


def scalar_like(value: Any, like: Output) -> Output:
    """A scalar constant with ``like``'s element type (converted at run time if that is unknown)."""
    et = like.element_type
    if et.is_static():
        return Constant(np.asarray(value, dtype=et.to_dtype())).output(0)
    return ConvertLike(Constant(np.asarray(value, dtype=np.float32)), like).output(0)
