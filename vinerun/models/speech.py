"""A Kaldi-style speech model with deterministic weights, for the GNA device and ``vinerun speech``.

Per frame: ``features`` inputs -> affine + sigmoid -> affine (+ a recurrent affine of the previous
frame's hidden state, kept in a ReadValue/Assign memory) + tanh -> an LSTMCell of ``lstm`` units whose
hidden and cell states are carried from frame to frame by ReadValue/Assign (``lstm_h``, ``lstm_c``;
left out when ``lstm=0``) -> affine + ReLU -> affine scores.
Weights are Gaussian scaled by ``1/sqrt(fan_in)`` from a fixed seed, so a given call always builds
the same model.

Example:
    >>> model = speech_model(features=40, hidden=64, outputs=32)
    >>> [list(p.get_partial_shape().to_shape()) for p in model.get_parameters()]
    [[1, 40]]
    >>> model.get_variables()[0].get_info().variable_id
    'h'
"""

from __future__ import annotations

import numpy as np

from vinerun import opset13 as ops
from vinerun.errors import ValidationError
from vinerun.ir.model import Model


def speech_model(features: int = 40, hidden: int = 256, outputs: int = 128, seed: int = 0, lstm: int = 0) -> Model:
    """The frame model (batch 1; memory ``"h"`` of ``[1, hidden]``, plus ``lstm_h``/``lstm_c`` of
    ``[1, lstm]`` when ``lstm`` > 0)."""
    if not 8 <= features <= 65528 or hidden < 8 or outputs < 1 or lstm < 0:
        raise ValidationError(f"speech_model: features must be 8..65528, hidden >= 8, outputs >= 1 and lstm >= 0, "
                              f"got features={features}, hidden={hidden}, outputs={outputs}, lstm={lstm}")
    rng = np.random.default_rng(seed)

    def affine(x: object, fan_in: int, fan_out: int, bias: bool = True) -> object:
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        y = ops.matmul(x, ops.constant(w), False, False)
        if bias:
            y = ops.add(y, ops.constant((rng.standard_normal((1, fan_out)) * 0.1).astype(np.float32)))
        return y

    x = ops.parameter([1, features], name="feats")
    a = ops.sigmoid(affine(x, features, hidden), name="layer1")
    prev = ops.read_value(ops.constant(np.zeros((1, hidden), np.float32)), "h", name="h_read")
    z = ops.tanh(ops.add(affine(a, hidden, hidden), affine(prev, hidden, hidden, bias=False)), name="layer2")
    sinks = [ops.assign(z, prev.get_variable(), name="h_write")]
    width = hidden
    if lstm:
        z, cell_sinks = _lstm_layer(z, hidden, lstm, rng)
        sinks += cell_sinks
        width = lstm
    r = ops.relu(affine(z, width, hidden), name="layer3")
    scores = ops.add(ops.matmul(r, ops.constant((rng.standard_normal((hidden, outputs)) / np.sqrt(hidden))
                                                .astype(np.float32)), False, False),
                     ops.constant(np.zeros((1, outputs), np.float32)), name="scores")
    return Model([scores], sinks, [x], "kaldi_speech" if not lstm else "kaldi_speech_lstm")


def _lstm_layer(x: object, fan_in: int, units: int, rng: np.random.Generator) -> tuple[object, list]:
    """An LSTMCell whose states live in ReadValue/Assign memories ``lstm_h`` and ``lstm_c``."""
    h = ops.read_value(ops.constant(np.zeros((1, units), np.float32)), "lstm_h", name="lstm_h_read")
    c = ops.read_value(ops.constant(np.zeros((1, units), np.float32)), "lstm_c", name="lstm_c_read")
    w = (rng.standard_normal((4 * units, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
    r = (rng.standard_normal((4 * units, units)) / np.sqrt(units)).astype(np.float32)
    b = (rng.standard_normal(4 * units) * 0.1).astype(np.float32)
    cell = ops.lstm_cell(x, h, c, ops.constant(w), ops.constant(r), ops.constant(b), hidden_size=units, name="lstm")
    return cell.output(0), [ops.assign(cell.output(0), h.get_variable(), name="lstm_h_write"),
                            ops.assign(cell.output(1), c.get_variable(), name="lstm_c_write")]


#: the memory-layer shapes :func:`memory_layer_model` builds
MEMORY_LAYERS = ("affine", "affine_tanh", "affine_relu", "concat", "concat_sigmoid", "projection")


def memory_layer_model(kind: str = "affine", features: int = 40, memory: int = 32, outputs: int = 16,
                       seed: int = 0) -> Model:
    """A Kaldi-style memory layer: the state ``m`` (ReadValue/Assign ``"m"``, ``[1, memory]``) goes
    through an affine layer into its own Assign, so each frame's state is computed from the last one.

    ``kind``:

    - ``affine``: ``m' = m A + x B + b`` (affine only: the state is an affine's int32 sum);
    - ``affine_tanh`` / ``affine_relu``: ``m' = act(m A + x B + b)``;
    - ``concat``: ``m' = [x, m] W + b`` (a TDNN-style splice of the input and the memory, then an affine);
    - ``concat_sigmoid``: ``m' = sigmoid([x, m] W + b)``;
    - ``projection``: ``m' = sigmoid(x B + m A + b) P`` (the recurrent projection of Kaldi's LSTMP: the
      state is an affine projection of an activation).

    The output is the affine scores ``m' O + c``. Recurrent weights are scaled to spectral norm 0.6 so the
    state stays bounded; weights come from a fixed seed.

    Example:
        >>> model = memory_layer_model("concat")
        >>> model.get_variables()[0].get_info().variable_id, model.friendly_name
        ('m', 'memory_concat')
    """
    if kind not in MEMORY_LAYERS:
        raise ValidationError(f"memory_layer_model: kind must be one of {', '.join(MEMORY_LAYERS)}, got {kind!r}")
    rng = np.random.default_rng(seed)

    def weights(fan_in: int, fan_out: int, norm: float | None = None) -> object:
        w = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
        if norm is not None:
            w *= norm / np.linalg.norm(w, 2)
        return ops.constant(w.astype(np.float32))

    def bias(width: int) -> object:
        return ops.constant((rng.standard_normal((1, width)) * 0.1).astype(np.float32))

    x = ops.parameter([1, features], name="feats")
    m = ops.read_value(ops.constant(np.zeros((1, memory), np.float32)), "m", name="m_read")
    if kind.startswith("affine"):
        z = ops.add(ops.add(ops.matmul(m, weights(memory, memory, 0.6), False, False), bias(memory)),
                    ops.matmul(x, weights(features, memory, 0.8), False, False), name="m_sum")
        act = {"affine": None, "affine_tanh": ops.tanh, "affine_relu": ops.relu}[kind]
        new = z if act is None else act(z, name="m_act")
    elif kind.startswith("concat"):
        w = np.concatenate([rng.standard_normal((features, memory)) / np.sqrt(features) * 0.5,
                            rng.standard_normal((memory, memory)) / np.sqrt(memory) * 0.6])
        splice = ops.concat([x, m], 1, name="splice")
        z = ops.add(ops.matmul(splice, ops.constant(w.astype(np.float32)), False, False), bias(memory), name="m_sum")
        new = ops.sigmoid(z, name="m_act") if kind == "concat_sigmoid" else z
    else:  # projection
        cell = ops.sigmoid(ops.add(ops.add(ops.matmul(x, weights(features, 2 * memory), False, False),
                                           bias(2 * memory)),
                                   ops.matmul(m, weights(memory, 2 * memory, 0.6), False, False)), name="m_act")
        new = ops.matmul(cell, weights(2 * memory, memory, 0.6), False, False, name="m_projection")
    scores = ops.add(ops.matmul(new, weights(memory, outputs), False, False), bias(outputs), name="scores")
    return Model([scores], [ops.assign(new, m.get_variable(), name="m_write")], [x], f"memory_{kind}")


def silero_vad_tail(silero: Model) -> Model:
    """The part of a silero-vad model that GNA can run bit-exactly: its LSTM (one step per 32 ms chunk,
    ``h``/``c`` carried in ReadValue/Assign ``lstm_h``/``lstm_c``) and its decoder (ReLU, 1x1 convolution
    as an affine, sigmoid), with silero's own weights. The input ``lstm_in`` ``[1, 128]`` is what the
    encoder (STFT and convolutions, which GNA_SW_EXACT does not cover) gives the LSTM for one chunk.

    Example (``silero_vad_openvino_16k.onnx`` from the silero-vad package):
        >>> tail = silero_vad_tail(core.read_model(path))                 # doctest: +SKIP
        >>> [p.get_partial_shape() for p in tail.get_parameters()]        # doctest: +SKIP
        [<PartialShape: [1,128]>]
    """
    from vinerun.plugin_api.variable_state import constant_value

    nodes = silero.get_ordered_ops()
    cells = [n for n in nodes if n.type_name == "LSTMSequence"]
    if len(cells) != 1:
        raise ValidationError(f"silero_vad_tail: expected one LSTMSequence in '{silero.friendly_name}', "
                              f"found {len(cells)}")
    cell = cells[0]
    w, r, b = (constant_value(cell.input_value(i)) for i in (4, 5, 6))
    after = nodes[nodes.index(cell) + 1:]
    conv = next((n for n in after if n.type_name == "Convolution"), None)
    if conv is None or any(v is None for v in (w, r, b)) or constant_value(conv.input_value(1)) is None:
        raise ValidationError("silero_vad_tail: the LSTM weights or the decoder convolution after it are not "
                              "constants; is this a silero-vad model?")
    bias_add = next(iter(conv.output(0).get_target_inputs())).get_node()
    bias = [constant_value(v) for v in bias_add.input_values() if constant_value(v) is not None]
    units = int(cell.get_attributes()["hidden_size"])
    kernel = np.asarray(constant_value(conv.input_value(1)), np.float32).reshape(-1, units).T  # [units, 1]
    x = ops.parameter([1, w.shape[-1]], name="lstm_in")
    h = ops.read_value(ops.constant(np.zeros((1, units), np.float32)), "lstm_h", name="lstm_h_read")
    c = ops.read_value(ops.constant(np.zeros((1, units), np.float32)), "lstm_c", name="lstm_c_read")
    wr = [ops.constant(np.asarray(v[0], np.float32)) for v in (w, r, b)]
    lstm = ops.lstm_cell(x, h, c, *wr, hidden_size=units, name="lstm")
    y = ops.add(ops.matmul(ops.relu(lstm.output(0), name="decoder_relu"), ops.constant(kernel), False, False),
                ops.constant(np.asarray(bias[0] if bias else 0.0, np.float32).reshape(1, -1)))
    prob = ops.sigmoid(y, name="speech_prob")
    sinks = [ops.assign(lstm.output(0), h.get_variable(), name="lstm_h_write"),
             ops.assign(lstm.output(1), c.get_variable(), name="lstm_c_write")]
    return Model([prob], sinks, [x], "silero_vad_tail")
