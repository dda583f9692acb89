"""Nearest-neighbour upsampling by whole factors and half-pixel bilinear resizing (Interpolate, ONNX Resize)
through oneDNN's resampling.

YOLO necks, U-Nets and FPNs upsample by 2 with ``nearest``. For a whole factor ``f`` the coordinate modes
``asymmetric`` / ``tf_half_pixel_for_nn`` with ``floor`` and ``half_pixel`` / ``pytorch_half_pixel`` with
rounding to nearest (no ties can occur) all pick source index ``d // f``, which is what oneDNN's nearest
resampling computes: an exact copy, several times faster than the reference's gather, reading channels-last convolution
outputs as they are and running inside native segments. Other modes, fractional factors and dynamic shapes
keep their kernel (ATen for Interpolate, the reference for Resize).

Bilinear resizing as PyTorch exports ``F.interpolate(..., mode="bilinear", align_corners=False)`` (segmentation
heads: LR-ASPP's logits to the input size; ``linear_onnx`` with ``half_pixel``, any factor): oneDNN's linear
resampling maps output ``d`` to ``(d + 0.5) * in / out - 0.5`` and clamps at the edges, as the reference does
when the scale is ``out / in`` (a ``sizes`` target, or scales that are exactly that). Values agree to float
rounding (not bit-exact); in bf16 it keeps the resize in bf16 between convolutions.
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, PrimitiveCache, data_address, library
from vinerun.plugins.cpu.kernels._dnnl_ops import RESAMPLING_LINEAR, RESAMPLING_NEAREST, Resampling
from vinerun.plugins.cpu.kernels._native import (
    ValueLayout,
    dense_copy,
    dense_value,
    element_layout,
    output_layout,
    single_primitive_kernel,
)

#: input layouts a node makes primitives for
LAYOUTS = 4


def _exact_modes(node: Node) -> bool:
    """Whether the node's coordinate mode and rounding pick ``d // f`` for every whole factor ``f``."""
    ctm, rounding = node.coordinate_transformation_mode, node.nearest_mode  # type: ignore[attr-defined]
    # half-pixel: x = d // f + ((d % f) + 0.5) / f - 0.5, strictly within 0.5 of d // f: rounding to nearest only
    return (ctm in ("half_pixel", "pytorch_half_pixel") and rounding in ("round_prefer_floor", "round_prefer_ceil")
            or ctm in ("asymmetric", "tf_half_pixel_for_nn") and rounding == "floor")


def _planned_scales(node: Node, shape: tuple[int, ...], out: tuple[int, ...]) -> list[float] | None:
    """The coordinate transform's per-axis scales when the node's constant target gives ``out`` for ``shape``."""
    target = node.const_input(node._target_index())  # type: ignore[attr-defined]
    axes = node._axes(len(shape)) if target is not None else None  # type: ignore[attr-defined]
    if target is None or axes is None:
        return None
    try:
        planned, scales = node._plan(list(shape), target, axes)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a target the reference rejects: leave the node to it
        return None
    return list(scales) if tuple(planned) == out else None


def half_pixel_linear(node: Node) -> bool:
    """Whether ``node`` is an Interpolate ``linear_onnx`` resize of the spatial axes of a static 4-D tensor in
    half-pixel coordinates with scales ``out / in`` (what oneDNN's linear resampling computes)."""
    xs, ys = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    if (node.type_name != "Interpolate" or getattr(node, "mode", "") != "linear_onnx"
            or bool(getattr(node, "antialias", False)) or not xs.is_static or not ys.is_static or len(xs) != 4):
        return False
    shape, out = tuple(int(d) for d in xs.to_shape()), tuple(int(d) for d in ys.to_shape())
    ctm = node.coordinate_transformation_mode  # type: ignore[attr-defined]
    if ctm != "half_pixel" and not (ctm == "pytorch_half_pixel" and min(out[2:]) > 1):
        return False
    pads = node._pads(len(shape))  # type: ignore[attr-defined]
    scales = _planned_scales(node, shape, out)
    return (0 not in shape and not any(pads[0]) and not any(pads[1]) and scales is not None and out[:2] == shape[:2]
            and all(scales[a] == out[a] / shape[a] for a in (2, 3)))


def _whole_factors(node: Node, shape: tuple[int, ...], out: tuple[int, ...]) -> bool:
    """Whether ``out`` is ``shape`` with the spatial axes multiplied by whole factors that are also the
    coordinate transform's scales."""
    scales = _planned_scales(node, shape, out)
    if scales is None or out[:2] != shape[:2] or scales[0] != 1.0 or scales[1] != 1.0:
        return False
    return all(o % s == 0 and o >= s and scales[a] == o // s for a, (s, o) in enumerate(zip(shape, out, strict=True))
               if a >= 2)


def whole_factor_nearest(node: Node) -> bool:
    """Whether ``node`` (Interpolate or Resize) is a nearest upsampling of a 3-5-D static shape by whole factors
    in a coordinate mode that makes it an exact copy (whatever its element type)."""
    xs, ys = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    if (node.mode != "nearest" or bool(getattr(node, "antialias", False))  # type: ignore[attr-defined]
            or not xs.is_static or not ys.is_static or not _exact_modes(node)):
        return False
    shape, out = tuple(int(d) for d in xs.to_shape()), tuple(int(d) for d in ys.to_shape())
    pads = node._pads(len(shape)) if hasattr(node, "_pads") else ([0], [0])  # type: ignore[attr-defined]
    return 3 <= len(shape) <= 5 and 0 not in shape and not any(pads[0]) and not any(pads[1]) and \
        _whole_factors(node, shape, out)


def dnnl_nearest_kernel(node: Node) -> Kernel | None:
    """The kernel for a whole-factor nearest upsampling of an f32/bf16 3-5-D tensor of static shape, or None."""
    if not whole_factor_nearest(node):
        return None
    return _resampling_kernel(node, RESAMPLING_NEAREST, "onednn_resample_nearest")


def dnnl_linear_kernel(node: Node) -> Kernel | None:
    """The kernel for a half-pixel bilinear resize of an f32/bf16 4-D tensor of static shape, or None."""
    if not half_pixel_linear(node):
        return None
    return _resampling_kernel(node, RESAMPLING_LINEAR, "onednn_resample_linear")


def _resampling_kernel(node: Node, algorithm: int, exec_type: str) -> Kernel | None:
    """A resampling of the node's static shapes per input layout a call brings, into the output layout the readers
    want (None without oneDNN or for another element type than f32 / bf16); where oneDNN has only its reference
    code for that pair (a channels-last source into a C-contiguous model output: ``ref:any``, 95 ms for LR-ASPP's
    logits), the source is made C-contiguous first (one reorder) for the dense primitive."""
    lib = library()
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    if lib is None or dtype.name not in DATA_TYPES:
        return None
    shape = tuple(int(d) for d in node.get_input_partial_shape(0).to_shape())
    out = tuple(int(d) for d in node.get_output_partial_shape(0).to_shape())
    out_layout = output_layout(node, out, dtype)
    reference = node.evaluate
    dense_in = dense_value(shape, dtype)

    def make(x: ValueLayout) -> Resampling:
        return Resampling(lib, element_layout(x), element_layout(out_layout.value), algorithm)

    plain = PrimitiveCache(make, 1)

    def fallback(inputs: list) -> list:
        x = inputs[0]
        op = plain.get(dense_in) if type(x) is np.ndarray and x.dtype == dtype else None
        if op is None:
            return [np.ascontiguousarray(reference(inputs)[0])]
        x = dense_copy(x)
        y = out_layout.empty()
        op(torch.get_num_threads(), data_address(x), data_address(y))
        return [y]

    return single_primitive_kernel(node, shape, out_layout, make, fallback, exec_type, LAYOUTS)


@cpu_kernel("Resize")
def resize(node: Node) -> Kernel | None:
    """ONNX Resize: the whole-factor nearest upsampling above, else the reference."""
    return dnnl_nearest_kernel(node)
