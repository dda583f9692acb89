"""Element-wise activations: Relu, Sigmoid, Tanh, Clamp, Elu, Selu, PRelu, HardSigmoid, HSwish,
HSigmoid, SoftPlus, SoftSign, Gelu, Mish, Swish (opset1 and later).

Activations with parameters that OpenVINO passes as inputs (Selu, HardSigmoid, PRelu, Swish)
take them as scalar or broadcastable tensors of the data's type.
"""

from __future__ import annotations

import math

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op
from vinerun.ops._base import UnaryElementwise, without_attrs
from vinerun.ops.unary_math import FloatMath

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64) if a.dtype.kind != "f" or a.dtype.itemsize < 8 else a


@register_op
class Relu(UnaryElementwise):
    """``max(x, 0)``."""

    type_name = "Relu"

    def fn(self, x):
        return np.maximum(x, np.zeros((), x.dtype))


@register_op
class Sigmoid(FloatMath):
    """``1 / (1 + exp(-x))``."""

    type_name = "Sigmoid"

    def fn(self, x):
        return 0.5 * (1.0 + np.tanh(0.5 * x))  # 1 / (1 + exp(-x)) without overflow


@register_op
class Tanh(FloatMath):
    """Hyperbolic tangent."""

    type_name = "Tanh"

    def fn(self, x):
        return np.tanh(x)


@register_op
class Clamp(UnaryElementwise):
    """Clips to ``[min, max]``; for integer data the bounds round inward (ceil(min), floor(max))."""

    type_name = "Clamp"
    min = Attr("float")
    max = Attr("float")

    def fn(self, x):
        lo, hi = self.min, self.max
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            lo = max(math.ceil(lo), info.min) if math.isfinite(lo) else info.min
            hi = min(math.floor(hi), info.max) if math.isfinite(hi) else info.max
            return np.minimum(np.maximum(x, np.array(lo, x.dtype)), np.array(hi, x.dtype))
        return np.minimum(np.maximum(_f64(x), lo), hi)


@register_op
class Elu(FloatMath):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

    type_name = "Elu"
    alpha = Attr("float")

    def fn(self, x):
        return np.where(x > 0, x, self.alpha * np.expm1(x))


@register_op
class HSwish(FloatMath):
    """``x * min(max(x + 3, 0), 6) / 6``."""

    type_name, version = "HSwish", "opset4"

    def fn(self, x):
        return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


@register_op
class HSigmoid(FloatMath):
    """``min(max(x + 3, 0), 6) / 6``."""

    type_name, version = "HSigmoid", "opset5"

    def fn(self, x):
        return np.clip(x + 3.0, 0.0, 6.0) / 6.0


@register_op
class SoftPlus(FloatMath):
    """``log(1 + exp(x))``."""

    type_name, version = "SoftPlus", "opset4"

    def fn(self, x):
        return np.logaddexp(0.0, x)


@register_op
class SoftSign(FloatMath):
    """``x / (1 + |x|)``."""

    type_name, version = "SoftSign", "opset9"

    def fn(self, x):
        return x / (1.0 + np.abs(x))


@register_op
class Mish(FloatMath):
    """``x * tanh(softplus(x))``."""

    type_name, version = "Mish", "opset4"

    def fn(self, x):
        return x * np.tanh(np.logaddexp(0.0, x))


@register_op
class Gelu(FloatMath):
    """x * Phi(x); ``approximation_mode`` "ERF" (exact) or "TANH"."""

    type_name, version = "Gelu", "opset7"
    approximation_mode = Attr("str", "ERF")

    def infer(self) -> list:
        if self.approximation_mode.upper() not in ("ERF", "TANH"):
            raise ValidationError(f"approximation_mode must be ERF or TANH, got {self.approximation_mode!r}")
        return super().infer()

    def fn(self, x):
        return gelu(x, self.approximation_mode)


def gelu(x: np.ndarray, approximation_mode: str = "ERF") -> np.ndarray:
    """``x * Phi(x)``: exact (``"ERF"``) or with the tanh approximation (``"TANH"``)."""
    if approximation_mode.upper() == "TANH":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


@register_op
@without_attrs("approximation_mode")
class Gelu2(Gelu):
    """Gelu-2: the exact (erf) form only."""

    type_name, version = "Gelu", "opset2"


class _ParamActivation(Node):
    """Data plus parameter inputs broadcast against it; the output has the data's type and shape."""

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        shape = self.get_input_partial_shape(0)
        for i in range(1, self.get_input_size()):
            other = self.get_input_element_type(i)
            if et.is_static() and other.is_static() and other != et:
                raise ValidationError(f"input {i} has type {other.get_type_name()}, "
                                      f"the data has {et.get_type_name()}")
            shape = broadcast_shapes(shape, self.get_input_partial_shape(i))
        return [(et, shape)]

    def compute(self, x: np.ndarray, *params: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        with np.errstate(all="ignore"):
            y = self.compute(_f64(x), *[_f64(p) for p in inputs[1:]])
        if x.dtype.kind in "iu":
            y = np.trunc(y)
        return [np.asarray(y).astype(x.dtype)]


@register_op
class PRelu(_ParamActivation):
    """x where x >= 0, else slope * x (slope broadcasts NumPy-style)."""

    type_name, num_inputs = "PRelu", (2, 2)

    def compute(self, x, slope):
        return np.where(x < 0, slope * x, x)


@register_op
class Selu(_ParamActivation):
    """``lambda * (x if x > 0 else alpha * (exp(x) - 1))``; ``alpha`` and ``lambda`` are inputs 1 and 2."""

    type_name, num_inputs = "Selu", (3, 3)

    def compute(self, x, alpha, lambda_):
        return lambda_ * np.where(x > 0, x, alpha * np.expm1(x))


@register_op
class HardSigmoid(_ParamActivation):
    """``clip(alpha * x + beta, 0, 1)``; ``alpha`` and ``beta`` are inputs 1 and 2."""

    type_name, num_inputs = "HardSigmoid", (3, 3)

    def compute(self, x, alpha, beta):
        return np.clip(alpha * x + beta, 0.0, 1.0)


@register_op
class Swish(_ParamActivation):
    """x * sigmoid(beta * x); ``beta`` (optional second input) defaults to 1."""

    type_name, version, num_inputs = "Swish", "opset4", (1, 2)

    def compute(self, x, beta=1.0):
        return x * 0.5 * (1.0 + np.tanh(0.5 * beta * x))
