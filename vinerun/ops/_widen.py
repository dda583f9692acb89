"""Low-precision floats are computed in f32 by the references and cast back to their own type."""

from __future__ import annotations

import ml_dtypes
import numpy as np

LOW_PRECISION_FLOATS = frozenset(np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                                       ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
                                                       ml_dtypes.float8_e5m2fnuz))


def widen(x: np.ndarray) -> np.ndarray:
    """``x`` as f32 if it is a float narrower than 32 bits, else ``x`` itself."""
    return x.astype(np.float32) if x.dtype in LOW_PRECISION_FLOATS else x
