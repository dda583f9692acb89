"""The recurrence shared by every RNN/GRU/LSTM op (OpenVINO sequences and cells, ONNX ops).

Ops convert their inputs to one canonical form and call :func:`run_sequence` per direction:
``x`` is ``[batch, seq, input]``, states are ``[batch, hidden]``, and weights are split per gate
into dicts keyed by gate letter (``W["i"]`` is ``[hidden, input]``), so the gate order of the
source format (ONNX ``iofc``, OpenVINO ``fico``, ...) is handled once by :func:`split_gates`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vinerun.errors import ValidationError

Activation = Callable[[np.ndarray], np.ndarray]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def make_activation(name: str, alpha: float | None = None, beta: float | None = None) -> Activation:
    """An activation by its (case-insensitive) ONNX / OpenVINO name, with its alpha/beta."""
    key = name.lower()
    if key == "sigmoid":
        return _sigmoid
    if key == "tanh":
        return np.tanh
    if key == "relu":
        return lambda x: np.maximum(x, 0)
    if key == "affine":
        a, b = (1.0 if alpha is None else alpha), (0.0 if beta is None else beta)
        return lambda x: a * x + b
    if key == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda x: np.where(x >= 0, x, a * x)
    if key == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda x: np.where(x > a, x, 0)
    if key == "scaledtanh":
        a, b = (1.0 if alpha is None else alpha), (1.0 if beta is None else beta)
        return lambda x: a * np.tanh(b * x)
    if key == "hardsigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda x: np.clip(a * x + b, 0, 1)
    if key == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda x: np.where(x >= 0, x, a * (np.exp(x) - 1))
    if key == "softsign":
        return lambda x: x / (1 + np.abs(x))
    if key == "softplus":
        return lambda x: np.log1p(np.exp(x))
    raise ValidationError(f"unsupported recurrent activation '{name}'")


def make_activations(names: Sequence[str], alphas: Sequence[float], betas: Sequence[float]) -> list[Activation]:
    """Activations with alpha/beta consumed in order by those that take them (ONNX's convention)."""
    takes_alpha = {"affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"}
    takes_beta = {"affine", "scaledtanh", "hardsigmoid"}
    alphas, betas = list(alphas), list(betas)
    out = []
    for name in names:
        key = name.lower()
        a = alphas.pop(0) if key in takes_alpha and alphas else None
        b = betas.pop(0) if key in takes_beta and betas else None
        out.append(make_activation(name, a, b))
    return out


def split_gates(w: np.ndarray, order: str) -> dict[str, np.ndarray]:
    """Split the first axis of ``w`` into ``len(order)`` equal gates keyed by letter."""
    if w.shape[0] % len(order):
        raise ValidationError(f"gate axis of size {w.shape[0]} is not divisible by {len(order)} gates")
    return dict(zip(order, np.split(w, len(order), axis=0), strict=True))


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """Half types compute in float32; float32/float64 in themselves."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _clip(x: np.ndarray, clip: float) -> np.ndarray:
    return np.clip(x, -clip, clip) if clip > 0 else x


class RnnStep:
    """``H = f(X W^T + H R^T + B)``. Gate letter: ``i``."""

    def __init__(self, W, R, B, acts: Sequence[Activation], clip: float):
        self.W, self.R, self.B, self.f, self.clip = W["i"], R["i"], B["i"], acts[0], clip

    def __call__(self, x: np.ndarray, h: np.ndarray) -> tuple[np.ndarray]:
        return (self.f(_clip(x @ self.W.T + h @ self.R.T + self.B, self.clip)),)


class GruStep:
    """GRU with gates ``z`` (update), ``r`` (reset), ``h`` (hidden); biases ``B`` (input) and ``RB``.

    ``linear_before_reset`` applies the reset gate after the recurrent matmul (and its bias).
    """

    def __init__(self, W, R, B, RB, acts: Sequence[Activation], clip: float, linear_before_reset: bool):
        self.W, self.R, self.B, self.RB = W, R, B, RB
        self.f, self.g, self.clip, self.lbr = acts[0], acts[1], clip, linear_before_reset

    def __call__(self, x: np.ndarray, h: np.ndarray) -> tuple[np.ndarray]:
        W, R, B, RB, c = self.W, self.R, self.B, self.RB, self.clip
        z = self.f(_clip(x @ W["z"].T + h @ R["z"].T + B["z"] + RB["z"], c))
        r = self.f(_clip(x @ W["r"].T + h @ R["r"].T + B["r"] + RB["r"], c))
        if self.lbr:
            hh = x @ W["h"].T + r * (h @ R["h"].T + RB["h"]) + B["h"]
        else:
            hh = x @ W["h"].T + (r * h) @ R["h"].T + RB["h"] + B["h"]
        hh = self.g(_clip(hh, c))
        return ((1 - z) * hh + z * h,)


class LstmStep:
    """LSTM with gates ``i``, ``o``, ``f``, ``c``; optional peepholes ``P`` (dict i/o/f of [hidden])."""

    def __init__(self, W, R, B, acts: Sequence[Activation], clip: float,
                 P: dict[str, np.ndarray] | None = None, input_forget: bool = False):
        self.W, self.R, self.B, self.P = W, R, B, P
        self.f, self.g, self.h, self.clip, self.input_forget = acts[0], acts[1], acts[2], clip, input_forget

    def __call__(self, x: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        W, R, B, P, cl = self.W, self.R, self.B, self.P, self.clip

        def pre(g: str) -> np.ndarray:
            return x @ W[g].T + h @ R[g].T + B[g]

        i_pre, f_pre = pre("i"), pre("f")
        if P is not None:
            i_pre, f_pre = i_pre + P["i"] * c, f_pre + P["f"] * c
        i = self.f(_clip(i_pre, cl))
        f = 1 - i if self.input_forget else self.f(_clip(f_pre, cl))
        c_new = f * c + i * self.g(_clip(pre("c"), cl))
        o_pre = pre("o") + (P["o"] * c_new if P is not None else 0)
        o = self.f(_clip(o_pre, cl))
        return o * self.h(c_new), c_new


def run_sequence(step: Callable[..., tuple[np.ndarray, ...]], x: np.ndarray, lengths: np.ndarray,
                 states: tuple[np.ndarray, ...], reverse: bool) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Run ``step`` over ``x`` ([batch, seq, input]); returns Y ([batch, seq, hidden]) and final states.

    Batch entry ``b`` only takes steps ``t < lengths[b]`` (in reverse: from ``lengths[b] - 1`` down);
    Y is zero past each entry's length and the final states are those of its last real step.
    """
    batch, seq = x.shape[0], x.shape[1]
    hidden = states[0].shape[-1]
    y = np.zeros((batch, seq, hidden), states[0].dtype)
    for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
        active = (t < lengths)[:, None]
        if not active.any():
            continue
        new = step(x[:, t], *states)
        states = tuple(np.where(active, n, s).astype(s.dtype, copy=False) for n, s in zip(new, states, strict=True))
        y[:, t] = np.where(active, new[0], 0)
    return y, states


def directions(direction: str) -> list[bool]:
    """The ``reverse`` flag of each direction for ``forward`` / ``reverse`` / ``bidirectional``."""
    d = direction.lower()
    if d == "forward":
        return [False]
    if d == "reverse":
        return [True]
    if d == "bidirectional":
        return [False, True]
    raise ValidationError(f"direction must be forward, reverse or bidirectional, not '{direction}'")
