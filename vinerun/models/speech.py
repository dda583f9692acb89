"""A Kaldi-style speech model with deterministic weights, for the GNA device and ``vinerun speech``.

Per frame: ``features`` inputs -> affine + sigmoid -> affine (+ a recurrent affine of the previous
frame's hidden state, kept in a ReadValue/Assign memory) + tanh -> affine + ReLU -> affine scores.
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


def speech_model(features: int = 40, hidden: int = 256, outputs: int = 128, seed: int = 0) -> Model:
    """The frame model (batch 1, one memory ``"h"`` of ``[1, hidden]``)."""
    if not 8 <= features <= 65528 or hidden < 8 or outputs < 1:
        raise ValidationError(f"speech_model: features must be 8..65528 and hidden >= 8, got features={features}, "
                         f"hidden={hidden}, outputs={outputs}")
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
    r = ops.relu(affine(z, hidden, hidden), name="layer3")
    scores = ops.add(ops.matmul(r, ops.constant((rng.standard_normal((hidden, outputs)) / np.sqrt(hidden))
                                                .astype(np.float32)), False, False),
                     ops.constant(np.zeros((1, outputs), np.float32)), name="scores")
    return Model([scores], [ops.assign(z, prev.get_variable(), name="h_write")], [x], "kaldi_speech")
