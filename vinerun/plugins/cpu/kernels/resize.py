"""Resampling kernels on ATen: Interpolate via ``F.interpolate`` and GridSample via ``F.grid_sample``.

Only the attribute combinations whose PyTorch semantics equal the reference's are taken; anything
else (and, at run time, a call that would resize the batch or channel axes) runs the reference.
"""

from __future__ import annotations

import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugin_api.aten import interpolate_mode
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch
from vinerun.plugins.cpu.kernels.resample_dnnl import dnnl_linear_kernel, dnnl_nearest_kernel

_FLOAT = ("f32", "f64")


@cpu_kernel("Interpolate")
def interpolate(node: Node) -> Kernel | None:
    direct = dnnl_nearest_kernel(node) or dnnl_linear_kernel(node)  # oneDNN's resampling where it computes the same
    if direct is not None:
        return direct
    ps = node.get_input_partial_shape(0)
    if node.get_input_element_type(0).get_type_name() not in _FLOAT or ps.rank.is_dynamic:
        return None
    if node.antialias or any(node.pads_begin or []) or any(node.pads_end or []):
        return None
    rank = ps.rank.get_length()
    chosen = interpolate_mode(node, rank)
    if chosen is None:
        return None
    mode, align = chosen
    by_scales = node.shape_calculation_mode == "scales"

    def run(inputs: list) -> list:
        x = inputs[0]
        axes = node._axes(x.ndim, inputs)
        out_shape, scales = node._plan(list(x.shape), inputs[node._target_index()], axes)
        if out_shape[:2] != list(x.shape[:2]) or scales[0] != 1.0 or scales[1] != 1.0:
            return node.evaluate(inputs)
        kwargs = {"mode": mode} if align is None else {"mode": mode, "align_corners": align}
        if by_scales:
            y = F.interpolate(to_torch(x), scale_factor=scales[2:], recompute_scale_factor=False, **kwargs)
        else:
            y = F.interpolate(to_torch(x), size=out_shape[2:], **kwargs)
        if list(y.shape) != out_shape:  # a rounding edge where PyTorch sizes differently
            return node.evaluate(inputs)
        return [to_numpy(y)]

    return Kernel(run, f"aten_interpolate_{mode}")


@cpu_kernel("GridSample")
def grid_sample(node: Node) -> Kernel | None:
    ps = node.get_input_partial_shape(0)
    if node.get_input_element_type(0).get_type_name() not in _FLOAT or ps.rank.is_dynamic:
        return None
    if node.get_input_element_type(1) != node.get_input_element_type(0):
        return None
    rank = ps.rank.get_length()
    mode, padding = node.mode, node.padding_mode
    if rank not in (4, 5) or (rank == 5 and mode == "bicubic"):
        return None
    # PyTorch pads bicubic taps and reflects coordinates differently from the reference
    if padding == "reflection" or (padding == "border" and mode == "bicubic"):
        return None
    align = bool(node.align_corners)

    def run(inputs: list) -> list:
        x, grid = to_torch(inputs[0]), to_torch(inputs[1])
        return [to_numpy(F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align))]

    return Kernel(run, f"aten_grid_sample_{mode}")

