"""The bit-exact integer path (``GNA_SW_EXACT``): affine layers, activations, eltwise, concat and memory.

Covered (a graph, compiled in topological order): inputs ``[N, K]`` (N <= 8), ``MatMul`` with constant
weights (optionally ``+ constant bias``), PWL activations (Sigmoid, Tanh, SoftSign, Relu, Clamp),
eltwise Add/Sub/Multiply between two activations, Concat, reshape-like ops and ReadValue/Assign
state. The steps follow specs/gna.md: inputs are quantized with their scale factor (user, else 1.0;
round half away from zero, int16 saturation), weights and biases by :mod:`.quantize` (i16, or i8 with
row multipliers), the affine sums in int64 saturated to int32 every ``BufferElementCount / batch``
inputs (:mod:`.arith`), activations are designed PWLs quantized to the hardware's segments and
evaluated with its shift/saturate rule, with output scale 2048 (:mod:`.scales`). A 32-bit value that
feeds a layer needing int16 (affine, Mul, Concat, Assign, a second 32-bit Add input) gets an identity
PWL, as the plugin inserts. Add/Sub run as a diagonal affine (the 32-bit input, else the first, is the
bias; the other gets weight ``round(s_b/s_a)``, negated for Sub; above 32767 the bias side is
requantized to ``s_a*32767``), Mul as a diagonal with one input as the weights (``s_0*s_1``).
Concat inputs share one scale (an input's, else the first non-activation's, else the first's);
activations and memory reads are requantized by restarting the propagation with their new output
scale; otherwise ``layers entered into concat have different scale factors``. State is int16 with one
scale per variable, chosen once (the Assign side's the first time they differ, or a concat's); after
that the Assign side is requantized into it (see ``_assign``); ``query_state`` shows ``q/s`` as floats and
``set_state`` takes floats, as the original plugin did. The output is ``q / s_out``.

LSTMCell, one-step LSTMSequence and GRUCell are first decomposed into these primitives (:mod:`.cells`).

Quantized models (:mod:`.fake_quantize`): an input FakeQuantize (or ONNX Q/DQ pair) gives the input scale
``(levels-1)/(high-low)``, overriding the user's with a warning; FakeQuantize'd or integer-stored weights give the
weight scale and precision (i8 when ``levels <= 255``); a FakeQuantize on an activation gives the output scale of the
layer before it (capped at 2048, 4096 for identity/ReLU/clamp) and runs as an integer clamp when the scales agree,
else as a saturating PWL into its own scale; an affine whose output is FakeQuantize'd has its weight scale reduced so
that the range fits int32.

Not yet: convolution, pooling, split; a model using them raises ``NotSupportedError`` at compile time.

>>> backend = ExactBackend(model, GNAConfig(scale_factors={"x": 2048.0}))   # doctest: +SKIP
>>> backend.run([x], {})                                                   # doctest: +SKIP
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vinerun.errors import NotSupportedError, ValidationError
from vinerun.ir.model import Model, topological_order
from vinerun.ir.node import Node, Output
from vinerun.plugin_api.variable_state import constant_value
from vinerun.plugins.gna import arith, pwl, pwl_functions, pwl_segments, quantize, scales
from vinerun.plugins.gna import fake_quantize as fq
from vinerun.plugins.gna.cells import decompose_cells
from vinerun.plugins.gna.config import GNAConfig, target_name

RESHAPES = {"Reshape", "Squeeze", "Unsqueeze"}
CURVED = {"Sigmoid": "sigmoid", "Tanh": "tanh", "SoftSign": "softsign"}
ELTWISE = {"Add", "Subtract", "Multiply"}
COVERED = ("MatMul with constant weights (+ constant bias Add), Sigmoid, Tanh, SoftSign, Relu, Clamp, "
           "Add/Subtract/Multiply between activations, Concat, ReadValue/Assign, Reshape/Squeeze/Unsqueeze, "
           "per-tensor FakeQuantize and QuantizeLinear/DequantizeLinear pairs, "
           "LSTMCell, one-step LSTMSequence and GRUCell (decomposed)")
log = logging.getLogger("vinerun")
#: key of the int16 state copies inside a request's state dict (next to the float views query_state shows)
INT_STATE = "\0gna_int16_state"
#: restarts allowed besides one per layer (each restart settles the scale of one more layer)
_MAX_PASSES = 8

Env = dict[Any, np.ndarray]
Step = Callable[[Env, dict[str, Any]], None]


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
class _Value:
    """A value at compile time: its integer width, scale factor, producer kind and requantization key."""

    bits: int
    scale: float
    kind: str = "other"   # "input", "activation", "memory", "affine", "other"
    origin: str = ""


class _Restart(Exception):
    """Propagation must restart: a scale was overridden (requantization)."""


def _key(out: Output) -> tuple[int, int]:
    return (id(out.node), out.index)


class ExactBackend:
    """A model compiled into integer steps; ``run`` quantizes the inputs and dequantizes the outputs.

    ``state`` is the request's variable store (float views plus the int16 copies under ``INT_STATE``).

    Example:
        >>> backend = ExactBackend(speech_model(), GNAConfig(scale_factors={"feats": 4096.0}))  # doctest: +SKIP
        >>> backend.state_scales, backend.run([frame], request_state)                       # doctest: +SKIP
        ({'h': 2048.0}, [array(...)])
    """

    def __init__(self, model: Model, config: GNAConfig, overrides: dict[str, float] | None = None):
        """``overrides``: requantizations to start from (an imported blob's, so that its propagation starts
        where the exported one settled instead of redoing every restart)."""
        self.config = config
        self.model = decompose_cells(model)
        self.names = unique_names(self.model)
        self.overrides: dict[str, float] = dict(overrides or {})
        self._history: dict[str, list[float]] = {}
        limit = _MAX_PASSES + 2 * len(self.model.get_ordered_ops())
        #: how many compile passes propagation took (1 = no restart)
        self.passes = 0
        while True:
            self.passes += 1
            try:
                self._compile_model()
                break
            except _Restart:
                if self.passes >= limit:
                    raise ValidationError(f"GNA scale-factor propagation of '{model.friendly_name}' did not settle "
                                          f"in {limit} passes") from None

    @staticmethod
    def unsupported(what: str) -> NotSupportedError:
        return NotSupportedError(f"GNA_SW_EXACT does not cover this model yet: {what}. The integer path covers "
                                 f"{COVERED}; use GNA_DEVICE_MODE=GNA_SW_FP32 for the rest")

    def _requantize(self, origin: str, scale: float) -> None:
        """Give ``origin`` (an activation, affine or memory read) the output scale ``scale`` and restart
        propagation; a scale that comes back to one it had before is an oscillation, reported by name."""
        seen = self._history.setdefault(origin, [])
        if any(np.isclose(scale, s, rtol=1e-9) for s in seen):
            trail = " -> ".join(f"{s:g}" for s in [*seen, scale])
            raise ValidationError(f"GNA scale-factor propagation of '{self.model.friendly_name}' did not settle: "
                                  f"{origin} is requantized back and forth ({trail})")
        seen.append(scale)
        self.overrides[origin] = scale
        raise _Restart

    def _record(self, name: str, *parts: Any) -> None:
        """Add a quantized table (arrays, scales) under ``name`` to what :meth:`fingerprint` digests."""
        h = hashlib.sha256()
        for part in parts:
            if isinstance(part, np.ndarray):
                h.update(f"{part.dtype.str}{part.shape}".encode())
                h.update(np.ascontiguousarray(part).tobytes())
            else:
                h.update(repr(part).encode())
            h.update(b"|")
        self.tables.setdefault(name, []).append(h.hexdigest())

    def fingerprint(self) -> str:
        """A digest of everything the integer pipeline computes with: input, output and state scales,
        quantized weights, biases, row multipliers, PWL segments, diagonal weights and the accumulator
        chunk. Two compilations with the same fingerprint give the same outputs bit for bit. It does not
        depend on the order layers were compiled in (an imported graph may be ordered differently)."""
        h = hashlib.sha256()
        for name in sorted(self.tables):
            h.update(name.encode())
            for entry in sorted(self.tables[name]):
                h.update(entry.encode())
        return h.hexdigest()

    # --- compile -------------------------------------------------------------------------------

    def _compile_model(self) -> None:
        model = self.model
        self.steps: list[Step] = []
        self.values: dict[tuple[int, int], _Value] = {}
        self.fused: set[int] = set()
        self.identity_of: dict[tuple[int, int], tuple[Any, _Value]] = {}
        self.input_keys: list[tuple[tuple[int, int], float]] = []
        self.outputs: list[tuple[tuple[int, int], float, list[int]]] = []
        self.state_scales: dict[str, float] = {}
        self.read_nodes: dict[str, Node] = {}
        self.tables: dict[str, list[str]] = {}
        #: per affine layer: (weight scale, weight precision, where the scale came from)
        self.weight_scales: dict[str, tuple[float, str, str]] = {}
        params = model.get_parameters()
        batch = 1
        for i, param in enumerate(params):
            names = [param.friendly_name, *param.output(0).get_names()]
            s = self._input_scale(i, param, names)
            shape = param.get_output_partial_shape(0).to_shape()
            batch = max(batch, int(np.prod(shape[:-1] or [1])))
            self.values[_key(param.output(0))] = _Value(16, s, "input", f"input:{param.friendly_name}")
            self.input_keys.append((_key(param.output(0)), s))
            self._record(f"input:{i}", s)
        self.batch = min(batch, 8)
        folded: set[int] = set()  # constant subgraphs (weights behind Convert/Reshape...): read by their users
        for node in _compile_order(model):
            inputs = [v.node for v in node.input_values()]
            if node.type_name == "Constant" or (inputs and node.type_name not in ("Result", "Assign", "ReadValue")
                                                and all(id(n) in folded for n in inputs)):
                folded.add(id(node))
                continue
            if id(node) in self.fused or node.type_name == "Parameter":
                continue
            self._compile(node)

    def _input_scale(self, index: int, param: Node, names: list[str]) -> float:
        """FakeQuantize after the input, else the user's scale factor, else 1.0; the FakeQuantize overrides a
        different user value with a warning (as the Intel plugin did)."""
        user = self.config.input_scale_factor(index, names)
        stats = fq.input_fake_quantize(param)
        if stats is None:
            return user
        s = quantize.input_scale((stats.low, stats.high, stats.levels))
        given = any(n in self.config.scale_factors for n in names) or index in self.config.scale_factors_by_index
        if given and not np.isclose(user, s, rtol=1e-6) and self.passes == 1:
            log.warning("GNA: input '%s' uses the scale factor %g of FakeQuantize '%s' instead of the given %g",
                        param.friendly_name, s, stats.node.friendly_name, user)
        return s

    def _in(self, node: Node, i: int) -> tuple[Any, _Value]:
        out = node.input_value(i)
        value = self.values.get(_key(out))
        if value is None:
            if constant_value(out) is not None:
                raise self.unsupported(f"constant input {i} of {node.type_name} '{node.friendly_name}'")
            raise self.unsupported(f"input {i} of {node.type_name} '{node.friendly_name}'")
        return _key(out), value

    def _in16(self, node: Node, i: int) -> tuple[Any, _Value]:
        """Input ``i`` as int16: a 32-bit value gets an identity PWL (shared by its consumers)."""
        key, value = self._in(node, i)
        if value.bits == 16:
            return key, value
        if key not in self.identity_of:
            origin = f"identity:{value.origin}"
            s_out = self.overrides.get(origin) or scales.activation_output_scale("identity", value.scale)
            new_key = ("identity", key)
            self._pwl_step(key, new_key, pwl_functions.exact("identity"), value.scale, s_out, origin)
            self.identity_of[key] = (new_key, _Value(16, s_out, "activation", origin))
        return self.identity_of[key]

    def _set(self, node: Node, value: _Value) -> tuple[int, int]:
        key = _key(node.output(0))
        self.values[key] = value
        return key

    def _const(self, out: Output, what: str) -> np.ndarray:
        value = constant_value(out)
        if value is None:
            raise self.unsupported(f"{what} of '{out.node.friendly_name}' is not a constant")
        return np.asarray(value, dtype=np.float64)

    def _compile(self, node: Node) -> None:
        t = node.type_name
        if t in RESHAPES or (t == "Convert" and node.get_output_element_type(0).is_real()):
            src, value = self._in(node, 0)
            dst, shape = self._set(node, value), list(node.get_output_partial_shape(0).to_shape())
            self.steps.append(lambda env, st, src=src, dst=dst, shape=shape:
                              env.__setitem__(dst, env[src].reshape(shape)))
        elif t == "MatMul":
            self._affine(node)
        elif t in CURVED:
            segments = list(_designed(CURVED[t], self.config.pwl_max_error_percent, self.config.pwl_algorithm.name))
            self._activation(node, segments, "sigmoid")
        elif t == "Relu":
            self._activation(node, pwl_functions.exact("relu"), "relu")
        elif t == "Clamp":
            attrs = node.get_attributes()
            segs = pwl_functions.exact("clamp", lo=float(attrs["min"]), hi=float(attrs["max"]))
            self._activation(node, segs, "clamp")
        elif t in ELTWISE:
            self._eltwise(node)
        elif t == "Concat":
            self._concat(node)
        elif t in ("FakeQuantize", "DequantizeLinear"):
            self._fake_quantize(node)
        elif t == "QuantizeLinear" and all(c.get_node().type_name == "DequantizeLinear"
                                           for c in node.output(0).get_target_inputs()):
            pass  # compiled with the DequantizeLinear it feeds (one FakeQuantize)
        elif t == "ReadValue":
            self._read_value(node)
        elif t == "Assign":
            self._assign(node)
        elif t == "Result":
            src, value = self._in(node, 0)
            self._record(f"output:{len(self.outputs)}", value.scale, value.bits)
            self.outputs.append((src, value.scale, list(node.get_output_partial_shape(0).to_shape())))
        else:
            raise self.unsupported(f"layer '{node.friendly_name}' (type {t})")

    def _affine(self, node: Node) -> None:
        attrs = node.get_attributes()
        if attrs.get("transpose_a"):
            raise self.unsupported(f"MatMul '{node.friendly_name}' with transpose_a")
        if constant_value(node.input_value(0)) is not None:
            raise self.unsupported(f"MatMul '{node.friendly_name}' with a constant first input")
        src, value = self._in16(node, 0)
        w = self._const(node.input_value(1), "the weights")
        if w.ndim != 2:
            raise self.unsupported(f"MatMul '{node.friendly_name}' with {w.ndim}-D weights")
        w = w if attrs.get("transpose_b") else w.T  # [rows, inputs]
        out_node, bias = node, None
        targets = [t.get_node() for t in node.output(0).get_target_inputs()]
        if len(targets) == 1 and targets[0].type_name == "Add":
            other = [v for v in targets[0].input_values() if v.node is not node]
            if len(other) == 1 and constant_value(other[0]) is not None:
                b = self._const(other[0], "the bias")
                if b.size == w.shape[0]:
                    bias, out_node = b.reshape(-1), targets[0]
                    self.fused.add(id(out_node))
        origin = f"affine:{self.names[id(node)]}"
        stats = fq.weight_statistics(node.input_value(1))
        precision, s_w, source = self.config.precision, None, "max|W|"
        if stats is not None:
            # FakeQuantize statistics decide the weights' scale and precision
            precision, s_w, source = stats.precision, stats.weight_scale(w), stats.source
            after = fq.consumer_fake_quantize(out_node.output(0))
            if after is not None:  # output statistics: the range must fit int32
                s_w = scales.reduce_for_output_stats(s_w, value.scale, max(abs(after.low), abs(after.high)))
        q = quantize.quantize_affine(w, bias, value.scale, precision, s_w=s_w)
        if origin in self.overrides and self.overrides[origin] < q.s_out:
            # requantized by a consumer (eltwise bias above the diagonal weight limit): a smaller weight scale
            q = quantize.quantize_affine(w, bias, value.scale, precision, s_w=self.overrides[origin] / value.scale)
        self.weight_scales[self.names[id(node)]] = (q.s_w, precision, source)
        s_out = scales.affine_output_scale(q.s_w, value.scale)
        chunk = arith.accumulation_chunk(target_name(self.config.compile_target), max(self.batch, 1))
        # integer-valued float64 weights, prepacked once: arith.affine uses them without a copy
        weights, biases, mult = q.weights.astype(np.float64), q.biases, q.multipliers
        self._record(origin, q.weights, q.biases, np.zeros(0) if mult is None else np.asarray(mult), s_out, chunk)
        out_shape = list(out_node.get_output_partial_shape(0).to_shape())
        dst = self._set(out_node, _Value(32, s_out, "affine", origin))

        def affine(env: Env, st: dict[str, Any]) -> None:
            y = arith.affine(env[src].reshape(-1, weights.shape[1]), weights, biases, chunk=chunk, multipliers=mult)
            env[dst] = y.reshape(out_shape)

        self.steps.append(affine)

    def _pwl_step(self, src: Any, dst: Any, segments: list[pwl_functions.Segment], s_in: float, s_out: float,
                  origin: str) -> None:
        hw = pwl_segments.quantize_segments(fit_input_range(segments, s_in), s_in, s_out)
        self._record(origin, hw.x_base, hw.y_base, hw.slope, s_in, s_out)
        self.steps.append(lambda env, st: env.__setitem__(dst, pwl_segments.evaluate(env[src], hw)))

    def _activation(self, node: Node, segments: list[pwl_functions.Segment], kind: str) -> None:
        src, value = self._in(node, 0)
        origin = f"activation:{self.names[id(node)]}"
        after = fq.consumer_fake_quantize(node.output(0))
        s_out = self.overrides.get(origin) or (after.output_scale(kind) if after is not None else
                                               scales.activation_output_scale(
                                                   kind if kind in ("identity", "relu") else "sigmoid", value.scale))
        dst = self._set(node, _Value(16, s_out, "activation", origin))
        self._pwl_step(src, dst, segments, value.scale, s_out, origin)

    def _eltwise(self, node: Node) -> None:
        t, name = node.type_name, self.names[id(node)]
        for i in (0, 1):
            if constant_value(node.input_value(i)) is not None:
                raise self.unsupported(f"{t} '{name}' with a constant input (only activations are covered)")
        shapes = [list(node.get_input_partial_shape(i).to_shape()) for i in (0, 1)]
        if shapes[0] != shapes[1]:
            raise self.unsupported(f"{t} '{name}' broadcasting {shapes[0]} with {shapes[1]}")
        if t == "Multiply":
            (k0, v0), (k1, v1) = self._in16(node, 0), self._in16(node, 1)
            dst = self._set(node, _Value(32, scales.mul_output_scale(v0.scale, v1.scale), "other", f"mul:{name}"))
            self._record(f"mul:{name}", v0.scale, v1.scale)
            self.steps.append(lambda env, st: env.__setitem__(dst, arith.diagonal(env[k0], env[k1])))
            return
        # Add/Sub as a diagonal affine: b (the 32-bit input, else input 0) + weight * a
        bits = [self._in(node, i)[1].bits for i in (0, 1)]
        b_index = 1 if (bits[1] == 32 and bits[0] == 16 and t == "Add") else 0
        a_index = 1 - b_index
        kb, vb = self._in(node, b_index) if bits[b_index] == 32 else self._in16(node, b_index)
        ka, va = self._in16(node, a_index)
        diag = scales.add_as_diagonal(va.scale, vb.scale, subtract=t == "Subtract")
        if diag.requantize_b:
            if vb.kind not in ("affine", "activation") or self.overrides.get(vb.origin) == diag.s_b:
                raise self.unsupported(f"{t} '{name}': its bias input cannot be requantized to {diag.s_b}")
            self._requantize(vb.origin, diag.s_b)
        weight = np.int64(diag.weight)
        self._record(f"eltwise:{name}", diag.weight, va.scale, vb.scale, diag.s_out)
        dst = self._set(node, _Value(32, diag.s_out, "other", f"eltwise:{name}"))
        self.steps.append(lambda env, st: env.__setitem__(dst, arith.diagonal(env[ka], weight, env[kb])))

    def _fake_quantize(self, node: Node) -> None:
        """A per-tensor FakeQuantize (or Q/DQ pair) on an activation: the value clamped to its range. When the value
        already carries the FakeQuantize's scale (an input, or an activation given it) it is an integer clamp;
        otherwise a saturating PWL into the FakeQuantize's scale (the Intel plugin's FakeQuantize PWL)."""
        stats = fq.activation_fake_quantize(node)
        if stats is None:
            raise self.unsupported(f"layer '{node.friendly_name}' (type {node.type_name})")
        name = self.names[id(node)]
        out = stats.source
        if constant_value(out) is not None:
            raise self.unsupported(f"{node.type_name} '{name}' on a constant that is not a MatMul's weights")
        key = _key(out)
        value = self.values.get(key)
        if value is None:
            raise self.unsupported(f"input 0 of {node.type_name} '{name}'")
        origin = f"activation:{name}"
        if value.bits == 16 and origin not in self.overrides and np.isclose(value.scale, stats.scale, rtol=1e-6):
            lo, hi = (int(arith.round_half_away(v * value.scale)) for v in (stats.low, stats.high))
            self._record(f"fq:{name}", lo, hi, value.scale)
            dst = self._set(node, _Value(16, value.scale, value.kind, value.origin))
            self.steps.append(lambda env, st: env.__setitem__(dst, np.clip(env[key], lo, hi)))
            return
        s_out = self.overrides.get(origin) or stats.output_scale("fake_quantize")
        dst = self._set(node, _Value(16, s_out, "activation", origin))
        self._pwl_step(key, dst, pwl_functions.exact("clamp", lo=stats.low, hi=stats.high), value.scale, s_out, origin)

    def _concat(self, node: Node) -> None:
        ins = [self._in16(node, i) for i in range(node.get_input_size())]
        entries = [scales.ConcatInput(v.scale, v.kind) for _, v in ins]
        common = scales.concat_scale(entries)
        for _, v in ins:
            if not np.isclose(v.scale, common, rtol=1e-6) and v.kind in ("activation", "memory"):
                if self.overrides.get(v.origin) != common:
                    self._requantize(v.origin, common)
        scales.check_concat(entries, common)
        self._record(f"concat:{self.names[id(node)]}", common)
        axis = int(node.get_attributes()["axis"])
        keys = [k for k, _ in ins]
        dst = self._set(node, _Value(16, common, "other", f"concat:{self.names[id(node)]}"))
        self.steps.append(lambda env, st: env.__setitem__(dst, np.concatenate([env[k] for k in keys], axis=axis)))

    def _read_value(self, node: Node) -> None:
        var = node.get_variable_id()
        origin = f"memory:{var}"
        s = self.overrides.get(origin, scales.ACTIVATION_SCALE)
        self.state_scales[var], self.read_nodes[var] = s, node
        dst = self._set(node, _Value(16, s, "memory", origin))
        shape = list(node.get_output_partial_shape(0).to_shape())
        initial = self._initial(node, shape)

        def read(env: Env, st: dict[str, Any]) -> None:
            env[dst] = read_state(st, var, s, initial).reshape(shape)

        self.steps.append(read)

    def _initial(self, node: Node, shape: list[int]) -> np.ndarray:
        if node.get_input_size():
            value = constant_value(node.input_value(0))
            if value is None:
                raise self.unsupported(f"ReadValue '{node.friendly_name}' with a non-constant init value")
            return np.asarray(value, np.float32)
        return np.zeros(shape, np.float32)

    def _assign(self, node: Node) -> None:
        """The Assign side of a memory: the value written must carry the variable's scale.

        As the Intel plugin did for memory layers: the first time the two sides differ, the variable takes
        the Assign side's scale and propagation restarts from its ReadValue. Once the variable's scale is
        chosen (by that restart, or by a concat that requantized the ReadValue), it stays: the value
        written is requantized into it, by giving the activation that produces it (the identity PWL
        inserted after an affine, or the layer's own activation) the variable's scale as output scale.
        So a cycle ReadValue -> affine -> (activation) -> Assign settles instead of chasing its tail.
        """
        var = node.get_variable_id()
        if var not in self.state_scales:
            raise self.unsupported(f"Assign '{node.friendly_name}' without a ReadValue before it")
        src, value = self._in16(node, 0)
        s_var = self.state_scales[var]
        _, differs = scales.memory_scale(s_var, value.scale)
        if differs:
            memory = f"memory:{var}"
            if memory not in self.overrides:
                self._requantize(memory, value.scale)
            if value.kind != "activation":
                raise ValidationError(
                    f"GNA memory '{var}': Assign '{node.friendly_name}' writes a value of scale {value.scale:g} "
                    f"({value.origin or value.kind}) into a state of scale {s_var:g}, and no activation before it "
                    "can be requantized")
            self._requantize(value.origin, s_var)
        self._record(f"memory:{var}", s_var)
        self.steps.append(lambda env, st: write_state(st, var, env[src], s_var))

    # --- run -------------------------------------------------------------------------------------

    def run(self, inputs: list[Any], state: dict[str, Any]) -> list[Any]:
        env: Env = {}
        for (key, s), x in zip(self.input_keys, inputs, strict=False):
            env[key] = arith.quantize_input(np.asarray(x, dtype=np.float32), s)
        for step in self.steps:
            step(env, state)
        return [arith.dequantize(env[key], s).reshape(shape) for key, s, shape in self.outputs]


def unique_names(model: Model) -> dict[int, str]:
    """``id(node) -> name`` for the keys of requantizations and quantized tables: the friendly name, with
    ``#k`` added to the k-th repeat of a name used by several nodes (so two layers never share an override).

    Names must be the same whenever the same graph is compiled again (an imported blob's is): the GNA
    compiled model gives every node an explicit friendly name before compiling (auto names such as
    ``MatMul_12`` change with every clone)."""
    seen: dict[str, int] = {}
    out: dict[int, str] = {}
    for node in model.get_ordered_ops():
        name = node.friendly_name
        k = seen.get(name, 0)
        seen[name] = k + 1
        out[id(node)] = name if k == 0 else f"{name}#{k}"
    return out


def read_state(store: dict[str, Any], var: str, scale: float, initial: np.ndarray) -> np.ndarray:
    """The int16 state of ``var``: the device copy if the float view is still the one written with it,
    else the float value (set by the user, or the initial value after a reset) quantized with ``scale``."""
    ints = store.get(INT_STATE, {})
    view = store.get(var)
    if view is not None and var in ints and ints[var][0] is view:
        return ints[var][1]
    return arith.quantize_input(initial if view is None else np.asarray(view, np.float32), scale)


def write_state(store: dict[str, Any], var: str, q: np.ndarray, scale: float) -> None:
    """Keep ``q`` (int16) on the device and its float view ``q/s`` for ``query_state``."""
    view = arith.dequantize(q, scale)
    store.setdefault(INT_STATE, {})[var] = (view, np.array(q, dtype=np.int16, copy=True))
    store[var] = view


def _compile_order(model: Model) -> list[Node]:
    """Producers before consumers, every ReadValue before any Assign (a variable's scale is chosen at its
    read) and the Results in their index order (the outputs list follows it)."""
    reads = [n for n in model.get_ordered_ops() if n.type_name == "ReadValue"]
    return topological_order([*reads, *model.get_results(), *model.get_sinks()])
