"""Interpolate (opset4, opset11) on ``F.interpolate``, floats, where PyTorch's arithmetic is the reference's.

Taken: nearest with (asymmetric, floor) or (half_pixel, round_prefer_ceil) / (tf_half_pixel_for_nn, floor);
linear / linear_onnx (1-3 spatial axes) and cubic (2 spatial axes, coefficient -0.75) with half_pixel or
align_corners; no antialias, no pads, batch and channel axes kept, sizes and scales constant. Everything else
(other coordinate or nearest modes, Pillow modes, ONNX Resize's extras) runs on the host.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugin_api.aten import interpolate_mode
from vinerun.plugins.gpu.kernels import GpuKernel, constant_input, gpu_kernel
from vinerun.plugins.gpu.kernels._nn import float_node, static_rank
from vinerun.plugins.gpu.kernels.pool import per_size


def _keeps_batch_and_channels(node: Node, target: np.ndarray, axes: list[int]) -> bool:
    """Whether the constant sizes / scales leave axes 0 and 1 as they are."""
    ps = node.get_input_partial_shape(0)
    for a, t in zip(axes, np.asarray(target).reshape(-1), strict=True):
        if a >= 2:
            continue
        if node.shape_calculation_mode == "scales" and float(t) != 1.0:
            return False
        if node.shape_calculation_mode == "sizes" and (ps[a].is_dynamic or int(t) != ps[a].get_length()):
            return False
    return True


@gpu_kernel("Interpolate")
def interpolate(node: Node, device: torch.device) -> GpuKernel | None:
    rank = static_rank(node)
    if node.type_name != "Interpolate" or rank is None or not float_node(node) or node.antialias \
            or any(node.pads_begin or []) or any(node.pads_end or []):
        return None
    chosen = interpolate_mode(node, rank)
    target, axes = constant_input(node, node._target_index()), node._axes(rank)
    if chosen is None or target is None or axes is None or not _keeps_batch_and_channels(node, target, axes):
        return None
    mode, align = chosen
    kwargs = {"mode": mode} if align is None else {"mode": mode, "align_corners": align}
    exec_type = f"gpu_interpolate_{mode}"
    if node.shape_calculation_mode == "scales":
        # PyTorch scales coordinates by 1 / scale as the reference does, but sizes by floor(size * scale) where
        # the reference adds an epsilon: taken for a static shape where the two sizes agree
        ps = node.get_input_partial_shape(0)
        if not ps.is_static:
            # whole scale factors give size * scale exactly either way: any input shape
            full = [1.0] * rank
            for a, f in zip(axes, np.asarray(target, np.float64).reshape(-1), strict=False):
                full[a] = float(f)
            if any(f != int(f) or f < 1 for f in full[2:]):
                return None
            whole = {"scale_factor": full[2:], "recompute_scale_factor": False, **kwargs}
            return GpuKernel(lambda x: [F.interpolate(x[0], **whole)], exec_type)
        shape = [d.get_length() for d in ps]
        out_shape, scales = node._plan(shape, target, axes)
        if any(math.floor(s * f) != o for s, f, o in zip(shape[2:], scales[2:], out_shape[2:], strict=True)):
            return None
        fixed = {"scale_factor": scales[2:], "recompute_scale_factor": False, **kwargs}
        return GpuKernel(lambda x: [F.interpolate(x[0], **fixed)], exec_type)
    plan = per_size(lambda shape: {"size": node._plan(shape, target, axes)[0][2:], **kwargs})
    return GpuKernel(lambda x: [F.interpolate(x[0], **plan(list(x[0].shape)))], exec_type)
