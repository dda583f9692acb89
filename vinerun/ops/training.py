"""ai.onnx.preview.training optimizers (ONNX-only, version "onnx"): Adagrad, Momentum, Adam.

Each takes ``(R, T, *X, *G, *state...)``: learning rate R, step count T, then one group of n
tensors per role, and returns the updated tensors group by group (X first).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op


class _Optimizer(Node):
    num_inputs = (2, 1 << 30)
    groups_in = 0  # tensor groups after R and T (X, G, states...)
    norm_coefficient = Attr("float", 0.0)

    def _n(self) -> int:
        rest = self.get_input_size() - 2
        if rest <= 0 or rest % self.groups_in:
            raise ValidationError(f"expects R, T and {self.groups_in} groups of tensors, got {self.get_input_size()} "
                                  "inputs")
        return rest // self.groups_in

    def infer(self) -> list:
        n = self._n()
        for i, what in ((0, "R"), (1, "T")):
            if self.get_input_partial_shape(i).rank.is_static and len(self.get_input_partial_shape(i)) != 0:
                raise ValidationError(f"{what} must be a scalar, got shape {self.get_input_partial_shape(i)}")
        ins = [(self.get_input_element_type(2 + k), self.get_input_partial_shape(2 + k))
               for k in range(self.groups_in * n)]
        # Outputs: X group, then the state groups (inputs after X and G).
        out_groups = [0] + list(range(2, self.groups_in))
        return [ins[g * n + k] for g in out_groups for k in range(n)]

    def split(self, inputs: list) -> tuple[float, int, list[list[np.ndarray]]]:
        n = (len(inputs) - 2) // self.groups_in
        r = float(np.asarray(inputs[0]))
        t = int(np.asarray(inputs[1]))
        return r, t, [inputs[2 + g * n: 2 + (g + 1) * n] for g in range(self.groups_in)]


@register_op
class Adagrad(_Optimizer):
    """Adagrad: ``H += g^2``, ``X -= r * g / (sqrt(H) + epsilon)`` with ``r = R / (1 + T * decay_factor)``."""

    type_name, version = "Adagrad", "onnx"
    groups_in = 3
    decay_factor = Attr("float", 0.0)
    epsilon = Attr("float", 0.0)

    def evaluate(self, inputs: list) -> list:
        r, t, (xs, gs, hs) = self.split(inputs)
        rate = r / (1 + t * self.decay_factor)
        new_x, new_h = [], []
        for x, g, h in zip(xs, gs, hs, strict=False):
            g_reg = self.norm_coefficient * x + g
            h_new = h + g_reg * g_reg
            new_x.append((x - rate * g_reg / (np.sqrt(h_new) + self.epsilon)).astype(x.dtype))
            new_h.append(h_new.astype(h.dtype))
        return new_x + new_h


@register_op
class Momentum(_Optimizer):
    """SGD with momentum: ``V = alpha * V + beta' * g`` (beta' = 1 at T = 0), then a standard or Nesterov step."""

    type_name, version = "Momentum", "onnx"
    groups_in = 3
    alpha = Attr("float")
    beta = Attr("float")
    mode = Attr("str")

    def infer(self) -> list:
        if self.mode not in ("standard", "nesterov"):
            raise ValidationError(f"mode must be 'standard' or 'nesterov', got {self.mode!r}")
        return super().infer()

    def evaluate(self, inputs: list) -> list:
        r, t, (xs, gs, vs) = self.split(inputs)
        beta = self.beta if t > 0 else 1.0
        new_x, new_v = [], []
        for x, g, v in zip(xs, gs, vs, strict=False):
            g_reg = self.norm_coefficient * x + g
            v_new = self.alpha * v + beta * g_reg
            step = v_new if self.mode == "standard" else g_reg + self.alpha * v_new
            new_x.append((x - r * step).astype(x.dtype))
            new_v.append(v_new.astype(v.dtype))
        return new_x + new_v


@register_op
class Adam(_Optimizer):
    """Adam with bias correction; ``norm_coefficient_post`` shrinks X after the step."""

    type_name, version = "Adam", "onnx"
    groups_in = 4
    alpha = Attr("float", 0.9)
    beta = Attr("float", 0.999)
    epsilon = Attr("float", 1e-6)
    norm_coefficient_post = Attr("float", 0.0)

    def evaluate(self, inputs: list) -> list:
        r, t, (xs, gs, vs, hs) = self.split(inputs)
        rate = r * np.sqrt(1 - self.beta ** t) / (1 - self.alpha ** t) if t > 0 else r
        new_x, new_v, new_h = [], [], []
        for x, g, v, h in zip(xs, gs, vs, hs, strict=False):
            g_reg = self.norm_coefficient * x + g
            v_new = self.alpha * v + (1 - self.alpha) * g_reg
            h_new = self.beta * h + (1 - self.beta) * g_reg * g_reg
            x_new = (1 - self.norm_coefficient_post) * (x - rate * v_new / (np.sqrt(h_new) + self.epsilon))
            new_x.append(x_new.astype(x.dtype))
            new_v.append(v_new.astype(v.dtype))
            new_h.append(h_new.astype(h.dtype))
        return new_x + new_v + new_h

