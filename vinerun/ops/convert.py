"""Type conversion: Convert and ConvertLike (opset1), and ONNX's Cast options and BitCast.

``convert_array`` is the one conversion routine every op here (and anyone else) uses:

* float -> integer truncates toward zero; NaN becomes 0 and values outside the target range
  clamp to it (ONNX leaves this undefined; OpenVINO clamps).
* integer -> integer keeps the low bits (two's complement wrap), also for the 2- and 4-bit types.
* float8 targets saturate by default (out-of-range and +/-inf become +/-max); with
  ``saturate=False`` they follow the format (inf or NaN).
* f8e8m0 (a bare power of two) rounds ``up`` (default), ``down`` or to ``nearest``.
* strings parse as numbers ("1e-5", "INF", "NaN") and numbers print plainly.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.types import Type, storage_dtype

_F8_SATURATING = {np.dtype(t) for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
                                        ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz)}
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
_SMALL_INTS = {np.dtype(t) for t in (ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.int4, ml_dtypes.uint4)}
_ROUND_MODES = ("up", "down", "nearest")


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype in _F8_SATURATING or dtype == _E8M0 or dtype.name.startswith(
        ("bfloat16", "float4", "float6", "float8"))


def _is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu" or dtype in _SMALL_INTS


def _int_range(dtype: np.dtype) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dtype) if dtype in _SMALL_INTS else np.iinfo(dtype)
    return int(info.min), int(info.max)


def _parse_strings(x: np.ndarray) -> np.ndarray:
    def parse(s: object) -> float:
        text = s.decode() if isinstance(s, bytes) else str(s)
        try:
            return float(text.strip())
        except ValueError:
            raise ValidationError(f"cannot convert the string {text!r} to a number") from None

    return np.array([parse(s) for s in x.reshape(-1)], dtype=np.float64).reshape(x.shape)


def _format_numbers(x: np.ndarray) -> np.ndarray:
    flat = x.reshape(-1)
    if x.dtype == np.bool_:
        return np.array([str(bool(v)).lower() for v in flat], dtype=object).reshape(x.shape)
    if _is_float(x.dtype) and x.dtype.kind != "f":
        flat = flat.astype(np.float32)
    return np.array([str(v.item() if hasattr(v, "item") else v) for v in flat], dtype=object).reshape(x.shape)


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """Round |x| to a power of two 2^(e-127) and return the codes e (255 is NaN)."""
    bits = np.abs(x.astype(np.float32)).view(np.uint32)
    exp = (bits >> 23).astype(np.int64)
    man = (bits & 0x7FFFFF).astype(np.int64)
    nan = (exp == 255) & (man != 0)
    inf = (exp == 255) & (man == 0)
    if round_mode == "up":
        bump = man != 0
    elif round_mode == "nearest":
        bump = man >= 0x400000
    else:
        bump = np.zeros(x.shape, bool)
    code = exp + bump
    sub = exp == 0  # f32 subnormals lie below 2^-126: round between codes 0 (2^-127) and 1
    if round_mode == "up":
        code = np.where(sub, np.where(man > 0x400000, 1, 0), code)
    elif round_mode == "nearest":
        code = np.where(sub, np.where(man > 0x600000, 1, 0), code)
    else:
        code = np.where(sub, 0, code)
    too_big = code >= 255
    if saturate:
        code = np.where(too_big | inf, 254, code)
    else:
        code = np.where(too_big | inf, 255, code)
        code = np.where((exp == 0) & (man == 0), 255, code)
    code = np.where(nan, 255, code)
    return code.astype(np.uint8).view(_E8M0)


def convert_array(x: np.ndarray, dst: np.dtype, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """Convert ``x`` to ``dst`` following the rules in this module's docstring."""
    x = np.asarray(x)
    dst = np.dtype(dst)
    if x.dtype == dst:
        return x.copy()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if dst == np.dtype(object):
            return _format_numbers(x)
        if x.dtype == np.dtype(object) or x.dtype.kind in "US":
            x = _parse_strings(x)
        if dst == np.bool_:
            return np.asarray(x.astype(np.float64) != 0 if _is_float(x.dtype) else x != 0)
        if x.dtype == np.bool_:
            return x.astype(np.uint8).astype(dst)
        if dst == _E8M0:
            return _to_e8m0(x, saturate, round_mode)
        if dst in _F8_SATURATING:
            src = x.astype(np.float32) if not _is_float(x.dtype) or x.dtype.itemsize < 4 else x
            if saturate:
                big = float(ml_dtypes.finfo(dst).max)
                src = np.where(np.isnan(src), src, np.clip(src, -big, big))
            return src.astype(dst)
        if _is_int(dst):
            if _is_float(x.dtype):
                whole = np.trunc(x.astype(np.float64))
                if dst in _SMALL_INTS:  # ONNX wraps float -> int4/int2 as it does int -> int4
                    return _wrap(np.where(np.isfinite(whole), whole, 0).astype(np.int64), dst)
                lo, hi = _int_range(dst)
                over, under = whole >= hi, whole <= lo  # (float(hi) may round above hi, so set it exactly)
                inside = np.where(over | under | np.isnan(whole), 0, whole).astype(dst)
                return np.where(over, np.array(hi, dst), np.where(under, np.array(lo, dst), inside))
            if dst in _SMALL_INTS:
                return _wrap(x.astype(np.int64), dst)
            return x.astype(dst)
        if _is_float(x.dtype) and x.dtype.kind != "f" and dst.kind != "f":
            x = x.astype(np.float32)  # e.g. f8 -> bf16: go through f32, which holds both exactly
        return x.astype(dst)


def _wrap(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    lo, hi = _int_range(dst)
    span = hi - lo + 1
    return ((x - lo) % span + lo).astype(np.int8).astype(dst)


@register_op
class Convert(Node):
    """Element-wise conversion to ``destination_type`` (float8 targets saturate)."""

    type_name, version, num_inputs = "Convert", "opset1", (1, 1)
    destination_type = Attr("type")

    def infer(self) -> list:
        return [(self.destination_type, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        return [convert_array(inputs[0], storage_dtype(self.destination_type))]  # strings: object arrays


@register_op
class ConvertLike(Node):
    """Converts input 0 to the element type of input 1 (``like``)."""

    type_name, version, num_inputs = "ConvertLike", "opset1", (2, 2)

    def infer(self) -> list:
        return [(self.get_input_element_type(1), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        return [convert_array(inputs[0], inputs[1].dtype)]


@register_op
class Cast(Node):
    """ONNX Cast with non-default options: ``saturate`` (float8) and ``round_mode`` (f8e8m0).

    The translator emits a plain ``Convert`` when the options are the defaults.
    """

    type_name, version, num_inputs = "Cast", "onnx", (1, 1)
    destination_type = Attr("type")
    saturate = Attr("bool", True)
    round_mode = Attr("str", "up")

    def infer(self) -> list:
        if self.round_mode not in _ROUND_MODES:
            raise ValidationError(f"round_mode must be one of {_ROUND_MODES}, got {self.round_mode!r}")
        return [(self.destination_type, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        dst = storage_dtype(self.destination_type)
        return [convert_array(inputs[0], dst, saturate=self.saturate, round_mode=self.round_mode)]


@register_op
class BitCast(Node):
    """Reinterprets the bits of each element as ``destination_type`` (same bit width)."""

    type_name, version, num_inputs = "BitCast", "onnx", (1, 1)
    destination_type = Attr("type")

    def infer(self) -> list:
        src, dst = self.get_input_element_type(0), self.destination_type
        if src.is_static() and src.get_bitwidth() != dst.get_bitwidth():
            raise ValidationError(f"BitCast needs types of the same bit width; {src.get_type_name()} has "
                                  f"{src.get_bitwidth()} bits, {dst.get_type_name()} {dst.get_bitwidth()}")
        if dst == Type.string or src == Type.string:
            raise ValidationError("BitCast does not apply to strings")
        return [(dst, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = np.asarray(inputs[0])
        dst = self.destination_type.to_dtype()
        out = np.ascontiguousarray(x).view(dst)  # 1-d at least, so reshape back
        if dst == np.bool_:
            out = out != 0
        return [out.reshape(x.shape)]
