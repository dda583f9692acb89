"""Interpolate (opset4, opset11) and ONNX's Resize (version "onnx") for what Interpolate lacks.

All three resample chosen axes of the data by nearest, linear or cubic interpolation; the output
size comes from target sizes or scale factors. ONNX ``Resize`` adds ``tf_crop_and_resize`` (a region
of interest and an extrapolation value), ``half_pixel_symmetric``, ``exclude_outside`` and
``keep_aspect_ratio_policy``. The arithmetic lives in :mod:`vinerun.ops._resample`.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._base import normalize_axis
from vinerun.ops._pillow import PILLOW_MODES, pillow_resample
from vinerun.ops._resample import COORDINATE_MODES, NEAREST_MODES, ResampleConfig, resample

_MODES = {"nearest": "nearest", "linear": "linear", "linear_onnx": "linear", "cubic": "cubic"}
_EPS = 1e-5


class _ResampleOp(Node):
    """Shared shape inference and evaluation; subclasses say where sizes, scales and axes come from.

    ``antialias`` stretches the linear/cubic kernel by 1/scale when downsampling, as ONNX defines it.
    """

    mode = Attr("str", "nearest")
    shape_calculation_mode = Attr("str", "sizes")
    coordinate_transformation_mode = Attr("str", "half_pixel")
    nearest_mode = Attr("str", "round_prefer_floor")
    antialias = Attr("bool", False)
    coordinate_modes: tuple[str, ...] = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn",
                                         "align_corners")

    # --- where the operands are (overridden) --------------------------------------------
    def _target_index(self) -> int:
        return 1

    def _axes_index(self) -> int | None:
        return 2 if self.get_input_size() > 2 else None

    def _axes(self, rank: int, inputs: list | None = None) -> list[int] | None:
        i = self._axes_index()
        if i is None:
            return list(range(rank))
        raw = inputs[i] if inputs is not None else self.const_input(i)
        if raw is None:
            return None
        axes = [normalize_axis(int(a), rank, self) for a in np.asarray(raw).reshape(-1)]
        if len(set(axes)) != len(axes):
            raise ValidationError(f"axes {axes} repeat an axis")
        return axes

    def _pads(self, rank: int) -> tuple[list[int], list[int]]:
        return [0] * rank, [0] * rank

    def _config(self) -> ResampleConfig:
        if self.mode not in _MODES:
            raise ValidationError(f"unknown interpolation mode '{self.mode}'")
        return ResampleConfig(_MODES[self.mode], self.coordinate_transformation_mode, self.nearest_mode,
                              float(getattr(self, "cube_coeff", -0.75)), bool(self.antialias),
                              single_precision=True)

    # --- sizes ----------------------------------------------------------------------------
    def _plan(self, in_shape: list[int], target: np.ndarray, axes: list[int]) -> tuple[list[int], list[float]]:
        """Output shape and the per-axis scale used by the coordinate transform."""
        target = np.asarray(target).reshape(-1)
        if len(target) != len(axes):
            raise ValidationError(f"{len(target)} {self.shape_calculation_mode} given for {len(axes)} axes")
        out, scales = list(in_shape), [1.0] * len(in_shape)
        for a, t in zip(axes, target, strict=True):
            if self.shape_calculation_mode == "sizes":
                out[a] = int(t)
                scales[a] = int(t) / in_shape[a] if in_shape[a] else 1.0
            else:
                out[a] = int(np.floor(in_shape[a] * float(t) + _EPS))
                scales[a] = float(t)
        return out, scales

    def _check_attributes(self) -> None:
        if self.mode not in PILLOW_MODES or not isinstance(self, Interpolate):  # Pillow modes: Interpolate-11
            self._config()
        checks = [("shape_calculation_mode", self.shape_calculation_mode, ("sizes", "scales")),
                  ("coordinate_transformation_mode", self.coordinate_transformation_mode, self.coordinate_modes),
                  ("nearest_mode", self.nearest_mode, NEAREST_MODES)]
        for name, value, allowed in checks:
            if value not in allowed:
                raise ValidationError(f"{name} must be one of {list(allowed)}, got '{value}'")

    def infer(self) -> list:
        self._check_attributes()
        et, ps = self.get_input_element_type(0), self.get_input_partial_shape(0)
        if ps.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        rank = ps.rank.get_length()
        begin, end = self._pads(rank)
        if min(begin + end, default=0) < 0:
            raise ValidationError(f"pads must not be negative, got pads_begin {begin} and pads_end {end}")
        dims = [d + b + e if d.is_static else Dimension() for d, b, e in zip(ps, begin, end, strict=True)]
        axes = self._axes(rank)
        target = self.const_input(self._target_index())
        if axes is None:
            return [(et, PartialShape.dynamic(rank))]
        if target is None:
            return [(et, PartialShape([Dimension() if i in axes else d for i, d in enumerate(dims)]))]
        target = np.asarray(target).reshape(-1)
        if len(target) != len(axes):
            raise ValidationError(f"{len(target)} {self.shape_calculation_mode} given for {len(axes)} axes")
        if self.shape_calculation_mode == "sizes":
            out = list(dims)
            for a, t in zip(axes, target, strict=True):
                out[a] = Dimension(int(t))
            return [(et, PartialShape(out))]
        static = [d.get_length() if d.is_static else 1 for d in dims]
        sizes, _ = self._plan(static, target, axes)
        return [(et, PartialShape([Dimension(s) if d.is_static else d for s, d in zip(sizes, dims, strict=True)]))]

    def evaluate(self, inputs: list) -> list:
        data = inputs[0]
        begin, end = self._pads(data.ndim)
        if any(begin) or any(end):
            data = np.pad(data, list(zip(begin, end, strict=True)))
        axes = self._axes(data.ndim, inputs)
        out_shape, scales = self._plan(list(data.shape), inputs[self._target_index()], axes)
        if self.mode in PILLOW_MODES and isinstance(self, Interpolate):
            return [pillow_resample(data, self.mode, axes, out_shape, float(self.cube_coeff))]
        return [resample(data, self._config(), out_shape, scales)]


@register_op
class Interpolate(_ResampleOp):
    """Interpolate-11: ``(data, scales_or_sizes[, axes])``; which one by ``shape_calculation_mode``."""

    type_name, version, num_inputs = "Interpolate", "opset11", (2, 3)
    pads_begin = Attr("ints", [0])
    pads_end = Attr("ints", [0])
    cube_coeff = Attr("float", -0.75)

    def _pads(self, rank: int) -> tuple[list[int], list[int]]:
        def fit(p: list[int]) -> list[int]:
            return (list(p) + [0] * rank)[:rank]

        return fit(self.pads_begin or []), fit(self.pads_end or [])


@register_op
class Interpolate4(Interpolate):
    """Interpolate-4: ``(data, sizes, scales[, axes])``."""

    version, num_inputs = "opset4", (3, 4)

    def _target_index(self) -> int:
        return 1 if self.shape_calculation_mode == "sizes" else 2

    def _axes_index(self) -> int | None:
        return 3 if self.get_input_size() > 3 else None


@register_op
class Resize(_ResampleOp):
    """ONNX Resize features Interpolate lacks: ``(data, scales_or_sizes[, roi])``.

    ``roi`` holds ``[starts..., ends...]`` over ``axes`` (normalized) for ``tf_crop_and_resize``;
    ``keep_aspect_ratio_policy`` (``stretch``/``not_larger``/``not_smaller``) applies to sizes.
    """

    type_name, version, num_inputs = "Resize", "onnx", (2, 3)
    axes = Attr("ints", [])
    cubic_coeff_a = Attr("float", -0.75)
    exclude_outside = Attr("bool", False)
    extrapolation_value = Attr("float", 0.0)
    keep_aspect_ratio_policy = Attr("str", "stretch")
    coordinate_modes = COORDINATE_MODES

    def _axes_index(self) -> int | None:
        return None

    def _axes(self, rank: int, inputs: list | None = None) -> list[int]:
        return [normalize_axis(a, rank, self) for a in self.axes] if self.axes else list(range(rank))

    def _config(self) -> ResampleConfig:
        if self.mode not in ("nearest", "linear", "cubic"):
            raise ValidationError(f"unknown Resize mode '{self.mode}'")
        return ResampleConfig(self.mode, self.coordinate_transformation_mode, self.nearest_mode,
                              self.cubic_coeff_a, bool(self.antialias), bool(self.exclude_outside),
                              fractional_length=True)

    def _plan(self, in_shape: list[int], target: np.ndarray, axes: list[int]) -> tuple[list[int], list[float]]:
        target = np.asarray(target).reshape(-1)
        if len(target) != len(axes):
            raise ValidationError(f"{len(target)} {self.shape_calculation_mode} given for {len(axes)} axes")
        out, scales = list(in_shape), [1.0] * len(in_shape)
        policy = self.keep_aspect_ratio_policy
        if self.shape_calculation_mode == "sizes" and policy != "stretch":
            ratios = [int(t) / in_shape[a] for a, t in zip(axes, target, strict=True)]
            if policy not in ("not_larger", "not_smaller"):
                raise ValidationError(f"unknown keep_aspect_ratio_policy '{policy}'")
            r = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                out[a] = int(np.floor(r * in_shape[a] + 0.5))
                scales[a] = r
            return out, scales
        for a, t in zip(axes, target, strict=True):
            if self.shape_calculation_mode == "sizes":
                out[a] = int(t)
                scales[a] = int(t) / in_shape[a] if in_shape[a] else 1.0
            else:
                out[a] = int(np.floor(in_shape[a] * float(t)))
                scales[a] = float(t)
        return out, scales

    def infer(self) -> list:
        if self.shape_calculation_mode == "sizes" and self.keep_aspect_ratio_policy != "stretch":
            ps = self.get_input_partial_shape(0)
            target = self.const_input(1)
            if ps.is_static and target is not None:
                out, _ = self._plan([d.get_length() for d in ps], target, self._axes(len(ps)))
                return [(self.get_input_element_type(0), PartialShape(out))]
            return [(self.get_input_element_type(0), PartialShape.dynamic(ps.rank))]
        return super().infer()

    def evaluate(self, inputs: list) -> list:
        data = inputs[0]
        axes = self._axes(data.ndim)
        out_shape, scales = self._plan(list(data.shape), inputs[1], axes)
        rois = None
        if len(inputs) > 2 and inputs[2] is not None and np.asarray(inputs[2]).size:
            roi = np.asarray(inputs[2], np.float64).reshape(-1)
            n = len(axes)
            if roi.size != 2 * n:
                raise ValidationError(f"roi has {roi.size} values; expected {2 * n} for {n} axes")
            rois = [(0.0, 1.0)] * data.ndim
            for k, a in enumerate(axes):
                rois[a] = (float(roi[k]), float(roi[n + k]))
        return [resample(data, self._config(), out_shape, scales, rois, self.extrapolation_value)]

