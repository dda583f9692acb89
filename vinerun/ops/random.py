"""Random ops: RandomUniform (opset8) and the ONNX-only RandomUniformLike, RandomNormal(Like),
Bernoulli and Multinomial (version "onnx").

Seeds make results repeatable within vinerun (same seed, same values); they do not reproduce
another framework's generator. Without a seed every run draws fresh values.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type


def make_rng(seed: float | None) -> np.random.Generator:
    """A generator seeded from an ONNX float ``seed`` (fresh entropy when None)."""
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(np.frombuffer(np.float64(seed).tobytes(), dtype=np.uint64))


def _check_float(t: Type, what: str) -> None:
    if t.is_static() and not t.is_real():
        raise ValidationError(f"{what} must be a floating-point type, got {t.get_type_name()}")


@register_op
class RandomUniform(Node):
    """``RandomUniform(shape, min, max)``: uniform values in [min, max) of ``output_type``.

    ``global_seed == op_seed == 0`` draws fresh values each run; any other pair is a fixed seed.
    """

    type_name, version, num_inputs = "RandomUniform", "opset8", (3, 3)
    output_type = Attr("type", Type.f32)
    global_seed = Attr("int", 0)
    op_seed = Attr("int", 0)

    def infer(self) -> list:
        shape = self.const_input(0)
        ps = PartialShape([int(d) for d in shape.reshape(-1)]) if shape is not None else PartialShape.dynamic()
        return [(self.output_type, ps)]

    def evaluate(self, inputs: list) -> list:
        shape = [int(d) for d in np.asarray(inputs[0]).reshape(-1)]
        lo, hi = float(np.asarray(inputs[1]).reshape(-1)[0]), float(np.asarray(inputs[2]).reshape(-1)[0])
        seeded = self.global_seed != 0 or self.op_seed != 0
        rng = np.random.default_rng([self.global_seed, self.op_seed]) if seeded else np.random.default_rng()
        dtype = self.output_type.to_dtype()
        if self.output_type.is_integral():
            return [rng.integers(int(lo), int(hi), size=shape).astype(dtype)]
        return [rng.uniform(lo, hi, size=shape).astype(dtype)]


class _RandomLike(Node):
    """Shared: output takes input 0's shape and ``dtype`` (input 0's type when dynamic)."""

    num_inputs = (1, 1)
    dtype = Attr("type", Type.dynamic)
    seed = Attr("float", None)

    def out_type(self) -> Type:
        return self.dtype if self.dtype.is_static() else self.get_input_element_type(0)

    def infer(self) -> list:
        _check_float(self.out_type(), "the output type")
        return [(self.out_type(), self.get_input_partial_shape(0))]


@register_op
class RandomUniformLike(_RandomLike):
    """Uniform values in [low, high) shaped like the input."""

    type_name, version = "RandomUniformLike", "onnx"
    low = Attr("float", 0.0)
    high = Attr("float", 1.0)

    def evaluate(self, inputs: list) -> list:
        x = np.asarray(inputs[0])
        return [make_rng(self.seed).uniform(self.low, self.high, size=x.shape).astype(self.out_type().to_dtype())]


@register_op
class RandomNormalLike(_RandomLike):
    """Normal values (``mean``, ``scale``) shaped like the input."""

    type_name, version = "RandomNormalLike", "onnx"
    mean = Attr("float", 0.0)
    scale = Attr("float", 1.0)

    def evaluate(self, inputs: list) -> list:
        x = np.asarray(inputs[0])
        return [make_rng(self.seed).normal(self.mean, self.scale, size=x.shape).astype(self.out_type().to_dtype())]


@register_op
class RandomNormal(Node):
    """Normal values (``mean``, ``scale``) of a fixed ``shape``."""

    type_name, version, num_inputs = "RandomNormal", "onnx", (0, 0)
    shape = Attr("ints")  # type: ignore[assignment]
    dtype = Attr("type", Type.f32)
    mean = Attr("float", 0.0)
    scale = Attr("float", 1.0)
    seed = Attr("float", None)

    def infer(self) -> list:
        _check_float(self.dtype, "dtype")
        return [(self.dtype, PartialShape(self.shape))]

    def evaluate(self, inputs: list) -> list:
        return [make_rng(self.seed).normal(self.mean, self.scale, size=self.shape).astype(self.dtype.to_dtype())]


@register_op
class Bernoulli(Node):
    """1 with probability ``p`` (the input, element-wise), else 0, in ``dtype`` (input's type by default)."""

    type_name, version, num_inputs = "Bernoulli", "onnx", (1, 1)
    dtype = Attr("type", Type.dynamic)
    seed = Attr("float", None)

    def out_type(self) -> Type:
        return self.dtype if self.dtype.is_static() else self.get_input_element_type(0)

    def infer(self) -> list:
        _check_float(self.get_input_element_type(0), "the probabilities")
        return [(self.out_type(), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        p = np.asarray(inputs[0])
        draw = make_rng(self.seed).uniform(0.0, 1.0, size=p.shape)
        return [(draw < p).astype(self.out_type().to_dtype())]


@register_op
class Multinomial(Node):
    """``sample_size`` class indices per row of unnormalized log-probabilities [batch, classes]."""

    type_name, version, num_inputs = "Multinomial", "onnx", (1, 1)
    dtype = Attr("type", Type.i32)
    sample_size = Attr("int", 1)
    seed = Attr("float", None)

    def infer(self) -> list:
        ps = self.get_input_partial_shape(0)
        if ps.rank.is_static and len(ps) != 2:
            raise ValidationError(f"the input must be [batch, classes], got {ps}")
        if self.dtype not in (Type.i32, Type.i64):
            raise ValidationError(f"dtype must be i32 or i64, got {self.dtype.get_type_name()}")
        batch = ps[0] if ps.rank.is_static else -1
        return [(self.dtype, PartialShape([batch, self.sample_size]))]

    def evaluate(self, inputs: list) -> list:
        logits = np.asarray(inputs[0], dtype=np.float64)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        rng = make_rng(self.seed)
        out = np.stack([rng.choice(probs.shape[1], size=self.sample_size, p=row) for row in probs]) \
            if len(probs) else np.zeros((0, self.sample_size))
        return [out.astype(self.dtype.to_dtype())]
