"""AffineGrid (ONNX-only, version "onnx"): sampling grids for GridSample from affine matrices.

``theta [N, 2, 3]`` with ``size = [N, C, H, W]`` gives ``[N, H, W, 2]``; ``theta [N, 3, 4]`` with
``size = [N, C, D, H, W]`` gives ``[N, D, H, W, 3]``. Each output point is ``theta @ (x, y[, z], 1)``
where x runs over W, y over H and z over D in normalized [-1, 1] coordinates (pixel centres at the
ends with ``align_corners``, pixel edges without).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape


def normalized_positions(length: int, align_corners: bool) -> np.ndarray:
    if align_corners:
        return np.linspace(-1.0, 1.0, length) if length > 1 else np.zeros(length)
    return (2.0 * np.arange(length) + 1.0) / length - 1.0


def affine_grid(theta: np.ndarray, size: list[int], align_corners: bool) -> np.ndarray:
    spatial = size[2:]
    axes = [normalized_positions(n, align_corners) for n in spatial]  # D, H, W order
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m for m in reversed(mesh)]  # x (W), y (H), z (D)
    base = np.stack(coords + [np.ones_like(mesh[0])], axis=-1)  # [*S, r + 1]
    out = np.einsum("...k,nrk->n...r", base, theta.astype(np.float64))
    return out.astype(theta.dtype)


@register_op
class AffineGrid(Node):
    """``(theta [N, r, r + 1], size [N, C, *S])`` -> grid ``[N, *S, r]`` (r = 2 or 3)."""

    type_name, version, num_inputs = "AffineGrid", "onnx", (2, 2)
    align_corners = Attr("bool", False)

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        size = self.const_input(1)
        theta = self.get_input_partial_shape(0)
        if size is not None:
            dims = [int(v) for v in np.asarray(size).reshape(-1)]
            if len(dims) not in (4, 5):
                raise ValidationError(f"size must have 4 or 5 values, got {dims}")
            return [(et, PartialShape([dims[0], *dims[2:], len(dims) - 2]))]
        sizes = self.get_input_partial_shape(1)
        if sizes.rank.is_static and sizes[0].is_static:
            r = sizes[0].get_length() - 2
            return [(et, PartialShape([theta[0] if theta.rank.is_static else Dimension()]
                                      + [Dimension()] * r + [r]))]
        return [(et, PartialShape.dynamic())]

    def evaluate(self, inputs: list) -> list:
        theta, size = inputs
        dims = [int(v) for v in np.asarray(size).reshape(-1)]
        r = len(dims) - 2
        if r not in (2, 3) or theta.shape[1:] != (r, r + 1):
            raise ValidationError(f"theta {list(theta.shape)} does not fit size {dims}")
        return [affine_grid(theta, dims, self.align_corners)]
