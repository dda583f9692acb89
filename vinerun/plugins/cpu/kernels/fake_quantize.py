"""FakeQuantize on an integer grid (limits per tensor, input and output ranges equal, the low limit a whole
number of steps below 0: what a same-parameter Q -> DQ pair becomes, see ``low_precision.roundtrip``) in one
oneDNN pass: a binary add of the low limit with eltwise post-ops ``linear -> round -> clip -> linear``
(oneDNN's eltwise primitive has only its reference code with post-ops; the binary one has jit code). Rounding
half to even as the reference. Other FakeQuantize nodes run the reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, ELTWISE, data_address, library, optimized_impl
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD, Binary
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    arriving_layout,
    dense_value,
    element_layout,
    layout_of_value,
    output_layout,
)
from vinerun.transformations.low_precision.params import constant_value, fake_quantize_grid


@cpu_kernel("FakeQuantize")
def fake_quantize_kernel(node: Any) -> Kernel | None:
    lib = library()
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    shape = node.get_input_partial_shape(0)
    found = fake_quantize_grid(node)
    if lib is None or found is None or found[0].size != 1 or dtype.name not in DATA_TYPES or not shape.is_static:
        return None  # per tensor only: the limits are one binary operand broadcast over everything
    dims = tuple(int(d) for d in shape.to_shape())
    if not dims or 0 in dims:
        return None
    scale, zp = (float(v.reshape(-1)[0]) for v in found)
    given = np.asarray(constant_value(node.input_value(1)), dtype)  # the low limit, as the plan holds it
    lo = float(given.reshape(-1)[0])
    # y0 = x + lo = x - zp s; q = round(y0 / s + 2 zp) = round((x - lo) / s); y = q s + lo
    post_ops = [("eltwise", ELTWISE["linear"], 1.0 / scale, 2.0 * zp), ("eltwise", ELTWISE["round"], 0.0, 0.0),
                ("eltwise", ELTWISE["clip"], 0.0, float(node.levels - 1)), ("eltwise", ELTWISE["linear"], scale, lo)]
    low = given.reshape((1,) * len(dims))  # oneDNN broadcasts an operand of the destination's rank
    src, out = arriving_layout(node, 0, dims, dtype), output_layout(node, dims, dtype)
    low_layout = dense_value(low.shape, dtype)
    given_layout = dense_value(given.shape, dtype)  # the constant as a segment holds it (same bytes)
    op = Binary(lib, element_layout(src), element_layout(low_layout), element_layout(out.value), BINARY_ADD, post_ops)
    if optimized_impl(op, torch.get_num_threads()) is None:
        return None
    threads = torch.get_num_threads

    def run(inputs: list) -> list:
        x = inputs[0]
        if layout_of_value(x) != src:
            return node.evaluate(inputs)
        y = out.empty()
        op(threads(), data_address(x), data_address(y), data_address(low))  # Binary's order: src0, dst, src1
        return [y]

    kernel = Kernel(run, "onednn_fake_quantize")
    buffers = [Buffer(False, 0, src), Buffer(True, 0, out.value), Buffer(False, 1, given_layout)]
    step = NativeStep(op, lambda t: t, buffers)
    kernel.native = lambda layouts: step if layouts[0] in (None, src) else None
    return kernel
