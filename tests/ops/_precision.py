"""Precision helpers the CPU kernel tests share.

On a CPU with native bf16 (AMX / AVX512-BF16) the CPU device lowers f32 models to bf16 by default, as
OpenVINO does; tests that check a kernel against the reference at the model's own precision pin f32 with
:data:`F32`. A node computing in bf16 reports it in its exec type (:func:`exec_type`).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

#: compile config that keeps f32 models in f32 on every CPU
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
BF16 = np.dtype(ml_dtypes.bfloat16)


def exec_type(base: str, dtype: object) -> str:
    """The exec type a kernel called ``base`` reports for a node of ``dtype`` (``_bf16`` appended for bf16)."""
    return base + "_bf16" if np.dtype(dtype) == BF16 else base


def bf16_kernel(direct: str, torch_path: str, aten: str) -> str:
    """Which of a bf16 layer's kernels runs here: the direct oneDNN binding (installed, on an AVX-512 CPU), else
    ATen's oneDNN ops (AVX-512), else plain ATen (they raise on older CPUs)."""
    from vinerun.plugins.cpu.kernels._dnnl import library
    from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16

    if not mkldnn_bf16():
        return aten
    return direct if library() is not None else torch_path
