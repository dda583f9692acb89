"""ai.onnx.ml ops (ONNX-only, version "onnx"): LabelEncoder, ArrayFeatureExtractor, Binarizer.

TreeEnsemble lives in :mod:`vinerun.ops.tree_ensemble`.
"""

from __future__ import annotations

import math

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


def _key(v: object) -> object:
    """Dictionary key of one value; every NaN maps to one key, so a NaN key matches NaN inputs."""
    if isinstance(v, float) and math.isnan(v):
        return "__nan__"
    return v


@register_op
class LabelEncoder(Node):
    """Maps each input value through ``keys`` -> ``values`` (both 1-D arrays); unknown ones get ``default``."""

    type_name, version, num_inputs = "LabelEncoder", "onnx", (1, 1)
    keys = Attr("tensor")
    values = Attr("tensor")
    default = Attr("tensor")

    def infer(self) -> list:
        keys, values = np.asarray(self.keys), np.asarray(self.values)
        if keys.shape != values.shape or keys.ndim != 1:
            raise ValidationError(f"keys ({keys.shape}) and values ({values.shape}) must be 1-D of the same length")
        if np.asarray(self.default).size != 1:
            raise ValidationError("default must hold exactly one value")
        return [(Type(values.dtype), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = np.asarray(inputs[0])
        values = np.asarray(self.values)
        table = {_key(k): v for k, v in zip(np.asarray(self.keys).tolist(), values.tolist(), strict=False)}
        default = np.asarray(self.default).reshape(-1).tolist()[0]
        flat = [table.get(_key(v), default) for v in x.reshape(-1).tolist()]
        return [np.array(flat, dtype=values.dtype).reshape(x.shape)]


@register_op
class ArrayFeatureExtractor(Node):
    """Selects ``indices`` along the last axis of X (a 1-D X gives shape [1, len(indices)])."""

    type_name, version, num_inputs = "ArrayFeatureExtractor", "onnx", (2, 2)

    def infer(self) -> list:
        ps, ips = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if ps.rank.is_dynamic:
            return [(self.get_input_element_type(0), PartialShape.dynamic())]
        n = Dimension()
        if ips.is_static:
            n = Dimension(int(np.prod([d.get_length() for d in ips], dtype=np.int64)))
        lead = [Dimension(1)] if len(ps) == 1 else list(ps)[:-1]
        return [(self.get_input_element_type(0), PartialShape([*lead, n]))]

    def evaluate(self, inputs: list) -> list:
        x, idx = np.asarray(inputs[0]), np.asarray(inputs[1]).reshape(-1).astype(np.int64)
        last = x.shape[-1]
        if idx.size and (idx.min() < 0 or idx.max() >= last):
            raise ValidationError(f"indices {idx.tolist()} are out of range for a last axis of {last}")
        y = np.take(x, idx, axis=-1)
        return [y.reshape(1, -1) if x.ndim == 1 else y]


@register_op
class Binarizer(Node):
    """1 where X > ``threshold``, else 0, in X's element type."""

    type_name, version, num_inputs = "Binarizer", "onnx", (1, 1)
    threshold = Attr("float", 0.0)

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = np.asarray(inputs[0])
        return [(x > self.threshold).astype(x.dtype)]
