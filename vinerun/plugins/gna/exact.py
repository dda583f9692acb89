"""The bit-exact integer path (``GNA_SW_EXACT``), first slice: chains of affine layers and activations.

Covered: one input ``[N, K]`` (N <= 8) flowing through ``MatMul`` with constant weights (optionally
``+ constant bias``), PWL activations (Sigmoid, Tanh, SoftSign, Relu, Clamp) and reshape-like ops
to one output. The steps follow specs/gna.md: the input is quantized with its scale factor
(user, else 1.0; round half away from zero, int16 saturation), weights and biases by
:mod:`.quantize` (i16, or i8 with row multipliers), the affine sums in int64 saturated to int32 every
``BufferElementCount / batch`` inputs (:mod:`.arith`), activations are designed PWLs quantized to the
hardware's segments and evaluated with its shift/saturate rule (:mod:`.pwl`, :mod:`.pwl_segments`),
with output scale 2048 (:mod:`.scales`); two affine layers in a row get an identity PWL between them,
as the plugin inserts. The output is ``q / s_out``.

Not yet: state (ReadValue/Assign), eltwise between activations, concat/split, convolution, cells,
FakeQuantize scale factors; a model using them raises ``NotSupportedError`` at compile time.

>>> backend = ExactBackend(model, GNAConfig(scale_factors={"x": 2048.0}))   # doctest: +SKIP
>>> backend.run([x], {})                                                   # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vinerun.errors import NotSupportedError
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.plugin_api.variable_state import constant_value
from vinerun.plugins.gna import arith, pwl, pwl_functions, pwl_segments, quantize, scales
from vinerun.plugins.gna.config import GNAConfig, target_name

RESHAPES = {"Reshape", "Squeeze", "Unsqueeze"}
CURVED = {"Sigmoid": "sigmoid", "Tanh": "tanh", "SoftSign": "softsign"}
COVERED = ("MatMul with constant weights (+ constant bias Add), Sigmoid, Tanh, SoftSign, Relu, Clamp, "
           "Reshape/Squeeze/Unsqueeze, in a chain from one input to one output")

Step = Callable[[np.ndarray], np.ndarray]


@functools.lru_cache(maxsize=64)
def _designed(name: str, max_error: float, algorithm: str) -> tuple[pwl_functions.Segment, ...]:
    return tuple(pwl.design(name, max_error, algorithm))


def fit_input_range(segments: list[pwl_functions.Segment], s_in: float) -> list[pwl_functions.Segment]:
    """The segments an int32 input can reach: those starting above int32 are dropped, and the last one
    starting at or below the int32 minimum becomes the first (from -inf)."""
    lo, hi = arith.INT32
    kept = [s for s in segments if s.alpha * s_in < hi] or segments[:1]
    below = [i for i, s in enumerate(kept) if s.alpha * s_in <= lo]
    if below:
        kept = [replace(kept[below[-1]], alpha=pwl_functions.NEG_INF), *kept[below[-1] + 1:]]
    return kept


@dataclass
class _Signal:
    """The value flowing through the chain at compile time: its integer width and scale factor."""

    bits: int
    scale: float


class ExactBackend:
    """A model compiled into integer steps; ``run`` quantizes the input and dequantizes the output."""

    def __init__(self, model: Model, config: GNAConfig):
        self.config = config
        params = model.get_parameters()
        results = model.get_results()
        if len(params) != 1 or len(results) != 1 or model.get_variables():
            raise self.unsupported(f"model '{model.friendly_name}' has {len(params)} inputs, {len(results)} outputs "
                                   f"and {len(model.get_variables())} state variables")
        param = params[0]
        names = [param.friendly_name, *param.output(0).get_names()]
        self.input_scale = config.input_scale_factor(0, names)
        self.batch = int(np.prod(param.get_output_partial_shape(0).to_shape()[:-1] or [1]))
        self.steps: list[Step] = []
        signal = _Signal(16, self.input_scale)
        node = self._next(param)
        while node.type_name != "Result":
            node, signal = self._compile(node, signal)
        self.output_scale = signal.scale
        self.output_shape = list(results[0].get_output_partial_shape(0).to_shape())

    @staticmethod
    def unsupported(what: str) -> NotSupportedError:
        return NotSupportedError(f"GNA_SW_EXACT does not cover this model yet: {what}. The integer path covers "
                                 f"{COVERED}; use GNA_DEVICE_MODE=GNA_SW_FP32 for the rest")

    def _next(self, node: Node) -> Node:
        targets = [t.get_node() for o in node.outputs() for t in o.get_target_inputs()]
        if len(targets) != 1:
            raise self.unsupported(f"{node.type_name} '{node.friendly_name}' feeds {len(targets)} layers")
        return targets[0]

    def _const(self, out: Output, what: str) -> np.ndarray:
        value = constant_value(out)
        if value is None:
            raise self.unsupported(f"{what} of '{out.node.friendly_name}' is not a constant")
        return np.asarray(value, dtype=np.float64)

    def _compile(self, node: Node, signal: _Signal) -> tuple[Node, _Signal]:
        t = node.type_name
        if t in RESHAPES or (t == "Convert" and node.get_output_element_type(0).is_real()):
            shape = list(node.get_output_partial_shape(0).to_shape())
            self.steps.append(lambda x, shape=shape: x.reshape(shape))
            return self._next(node), signal
        if t == "MatMul":
            if signal.bits == 32:
                signal = self._pwl(pwl_functions.exact("identity"), signal, "identity")
            return self._affine(node, signal)
        if t in CURVED:
            algorithm = self.config.pwl_algorithm.name
            segments = list(_designed(CURVED[t], self.config.pwl_max_error_percent, algorithm))
            return self._next(node), self._pwl(segments, signal, CURVED[t])
        if t == "Relu":
            return self._next(node), self._pwl(pwl_functions.exact("relu"), signal, "relu")
        if t == "Clamp":
            attrs = node.get_attributes()
            segs = pwl_functions.exact("clamp", lo=float(attrs["min"]), hi=float(attrs["max"]))
            return self._next(node), self._pwl(segs, signal, "clamp")
        raise self.unsupported(f"layer '{node.friendly_name}' (type {t})")

    def _affine(self, node: Node, signal: _Signal) -> tuple[Node, _Signal]:
        attrs = node.get_attributes()
        if attrs.get("transpose_a"):
            raise self.unsupported(f"MatMul '{node.friendly_name}' with transpose_a")
        w = self._const(node.input_value(1), "the weights")
        if w.ndim != 2:
            raise self.unsupported(f"MatMul '{node.friendly_name}' with {w.ndim}-D weights")
        w = w if attrs.get("transpose_b") else w.T  # [rows, inputs]
        nxt = self._next(node)
        bias = None
        if nxt.type_name == "Add":
            other = [v for v in nxt.input_values() if v.node is not node]
            if len(other) == 1 and constant_value(other[0]) is not None:
                b = self._const(other[0], "the bias")
                if b.size == w.shape[0]:
                    bias = b.reshape(-1)
                    node, nxt = nxt, self._next(nxt)
        q = quantize.quantize_affine(w, bias, signal.scale, self.config.precision)
        chunk = arith.accumulation_chunk(target_name(self.config.compile_target), min(max(self.batch, 1), 8))
        # integer-valued float64 weights, prepacked once: arith.affine uses them without a copy
        weights, biases, mult = q.weights.astype(np.float64), q.biases, q.multipliers
        out_shape = list(node.get_output_partial_shape(0).to_shape())

        def affine(x: np.ndarray) -> np.ndarray:
            y = arith.affine(x.reshape(-1, weights.shape[1]), weights, biases, chunk=chunk, multipliers=mult)
            return y.reshape(out_shape)

        self.steps.append(affine)
        return nxt, _Signal(32, scales.affine_output_scale(q.s_w, signal.scale))

    def _pwl(self, segments: list[pwl_functions.Segment], signal: _Signal, kind: str) -> _Signal:
        s_out = scales.activation_output_scale(kind if kind in ("identity", "relu") else "sigmoid", signal.scale)
        hw = pwl_segments.quantize_segments(fit_input_range(segments, signal.scale), signal.scale, s_out)
        self.steps.append(lambda x: pwl_segments.evaluate(x, hw))
        return _Signal(16, s_out)

    def run(self, inputs: list[Any], state: dict[str, Any]) -> list[Any]:
        value = arith.quantize_input(np.asarray(inputs[0], dtype=np.float32), self.input_scale)
        for step in self.steps:
            value = step(value)
        return [arith.dequantize(value, self.output_scale).reshape(self.output_shape)]
