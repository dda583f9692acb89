"""Color conversion (opset8): ``NV12toRGB``, ``NV12toBGR``, ``I420toRGB``, ``I420toBGR``.

Inputs are NHWC images of YUV 4:2:0 data (u8 or floating point). NV12 comes as one plane
``[N, H*3/2, W, 1]`` (Y rows, then interleaved UV rows) or two, ``Y [N, H, W, 1]`` and
``UV [N, H/2, W/2, 2]``; I420 as one plane (Y, then U, then V) or three, ``Y``, ``U [N, H/2, W/2, 1]``
and ``V``. The output is ``[N, H, W, 3]`` of the input's type, with OpenVINO's BT.601 coefficients:
``R = 1.164 (Y-16) + 1.596 (V-128)``, ``G = 1.164 (Y-16) - 0.391 (U-128) - 0.813 (V-128)``,
``B = 1.164 (Y-16) + 2.018 (U-128)``, clipped to [0, 255] (and rounded for integers).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


def yuv_to_rgb(y: np.ndarray, u: np.ndarray, v: np.ndarray, dtype: np.dtype, bgr: bool) -> np.ndarray:
    """Full-resolution Y, U, V planes ``[N, H, W]`` to ``[N, H, W, 3]`` RGB (or BGR) of ``dtype``."""
    c = y.astype(np.float32) - 16
    d = u.astype(np.float32) - 128
    e = v.astype(np.float32) - 128
    r = 1.164 * c + 1.596 * e
    g = 1.164 * c - 0.391 * d - 0.813 * e
    b = 1.164 * c + 2.018 * d
    out = np.clip(np.stack([b, g, r] if bgr else [r, g, b], axis=-1), 0, 255)
    if np.issubdtype(dtype, np.integer):
        out = np.round(out)
    return out.astype(dtype)


def _upsample(plane: np.ndarray) -> np.ndarray:
    """A half-resolution chroma plane ``[N, H/2, W/2]`` repeated to ``[N, H, W]``."""
    return plane.repeat(2, axis=1).repeat(2, axis=2)


class _YUV420toRGB(Node):
    """Shared shape inference: planes in, ``[N, H, W, 3]`` out."""

    bgr: ClassVar[bool] = False
    #: channels of each plane when given separately (NV12: Y, UV; I420: Y, U, V)
    planes: ClassVar[tuple[int, ...]] = ()

    def _check(self) -> None:
        n = self.get_input_size()
        if n not in (1, len(self.planes)):
            raise ValidationError(f"takes 1 or {len(self.planes)} planes, got {n}")
        for i in range(n):
            et = self.get_input_element_type(i)
            if et.is_static() and et != Type.u8 and not et.is_real():
                raise ValidationError(f"input {i} must be u8 or floating point, got {et.get_type_name()}")
            ps = self.get_input_partial_shape(i)
            if ps.rank.is_static and len(ps) != 4:
                raise ValidationError(f"input {i} must be a 4D NHWC tensor, got shape {ps}")
            want = 1 if n == 1 else self.planes[i]
            if ps.rank.is_static and ps[3].is_static and ps[3].get_length() != want:
                raise ValidationError(f"input {i} must have {want} channel(s), got shape {ps}")

    def infer(self) -> list:
        self._check()
        et = self.get_input_element_type(0)
        ps = self.get_input_partial_shape(0)
        if ps.rank.is_dynamic:
            return [(et, PartialShape([Dimension(), Dimension(), Dimension(), 3]))]
        n, h, w = ps[0], ps[1], ps[2]
        if self.get_input_size() == 1 and h.is_static:
            if h.get_length() % 3:
                raise ValidationError(f"a single-plane image needs a height divisible by 3 (H*3/2), got shape {ps}")
            h = Dimension(h.get_length() * 2 // 3)
        for dim, what in ((h, "height"), (w, "width")):
            if dim.is_static and dim.get_length() % 2:
                raise ValidationError(f"the image {what} must be even for 4:2:0 chroma, got {dim.get_length()}")
        return [(et, PartialShape([n, h, w, 3]))]

    def split(self, inputs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        y, u, v = self.split(inputs)
        return [yuv_to_rgb(y, u, v, np.asarray(inputs[0]).dtype, self.bgr)]


class _NV12(_YUV420toRGB):
    num_inputs = (1, 2)
    planes = (1, 2)

    def split(self, inputs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if len(inputs) == 1:
            img = inputs[0][..., 0]
            n, h3, w = img.shape
            h = h3 * 2 // 3
            y, uv = img[:, :h], img[:, h:].reshape(n, h // 2, w // 2, 2)
        else:
            y, uv = inputs[0][..., 0], inputs[1]
        return y, _upsample(uv[..., 0]), _upsample(uv[..., 1])


class _I420(_YUV420toRGB):
    num_inputs = (1, 3)
    planes = (1, 1, 1)

    def split(self, inputs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if len(inputs) == 1:
            img = inputs[0][..., 0]
            n, h3, w = img.shape
            h = h3 * 2 // 3
            chroma = img[:, h:].reshape(n, 2, h // 2, w // 2)
            y, u, v = img[:, :h], chroma[:, 0], chroma[:, 1]
        else:
            y, u, v = (x[..., 0] for x in inputs)
        return y, _upsample(u), _upsample(v)


@register_op
class NV12toRGB(_NV12):
    """NV12 (one or two planes) to RGB."""

    type_name, version = "NV12toRGB", "opset8"


@register_op
class NV12toBGR(_NV12):
    """NV12 (one or two planes) to BGR."""

    type_name, version, bgr = "NV12toBGR", "opset8", True


@register_op
class I420toRGB(_I420):
    """I420 (one or three planes) to RGB."""

    type_name, version = "I420toRGB", "opset8"


@register_op
class I420toBGR(_I420):
    """I420 (one or three planes) to BGR."""

    type_name, version, bgr = "I420toBGR", "opset8", True
