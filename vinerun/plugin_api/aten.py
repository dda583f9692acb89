"""What the PyTorch-based plugins (CPU, GPU) share: which ATen call computes a reference op exactly.

>>> interpolate_mode(node, 4)  # doctest: +SKIP
('bilinear', False)
"""

from __future__ import annotations

from vinerun.ir.node import Node

_LINEAR_BY_RANK = {3: "linear", 4: "bilinear", 5: "trilinear"}


def interpolate_mode(node: Node, rank: int) -> tuple[str, bool | None] | None:
    """(``F.interpolate`` mode, align_corners) computing what an Interpolate's attributes ask, or None."""
    mode, ctm, nearest = node.mode, node.coordinate_transformation_mode, node.nearest_mode
    if mode == "nearest":
        if ctm == "asymmetric" and nearest == "floor":
            return "nearest", None
        if (ctm, nearest) in (("half_pixel", "round_prefer_ceil"), ("tf_half_pixel_for_nn", "floor")):
            return "nearest-exact", None
        return None
    if ctm not in ("half_pixel", "align_corners"):
        return None
    if mode in ("linear", "linear_onnx") and rank in _LINEAR_BY_RANK:
        return _LINEAR_BY_RANK[rank], ctm == "align_corners"
    if mode == "cubic" and rank == 4 and node.cube_coeff == -0.75:
        return "bicubic", ctm == "align_corners"
    return None
