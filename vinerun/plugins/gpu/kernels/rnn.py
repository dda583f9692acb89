"""Recurrent ops on cuBLAS GEMMs: RNNCell, GRUCell, LSTMCell and the opset5 RNN/GRU/LSTMSequence, floats.

OpenVINO's gate orders (LSTM ``f, i, c, o``; GRU ``z, r, h``) and layouts are kept as they are: a sequence makes one
GEMM for the input projection of every step, then one recurrent GEMM per step; ``sequence_lengths`` masks the steps
on the device (an entry past its length keeps its state and writes zeros), so nothing is read on the host.
Activations: sigmoid, tanh and relu (no alpha / beta); ``clip`` clamps the pre-activations.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from vinerun.ir.node import Node
from vinerun.ops._rnn_engine import directions
from vinerun.plugins.gpu.kernels import GpuKernel, gpu_kernel
from vinerun.plugins.gpu.kernels._nn import float_node

Act = Callable[[torch.Tensor], torch.Tensor]
_ACTS: dict[str, Act] = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "relu": torch.relu}
#: ``step(xw, h, c, R, rb) -> (h, c)``: one time step from the input projection ``xw`` (bias included)
Step = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]
_GATES = {"LSTMCell": 4, "LSTMSequence": 4, "GRUCell": 3, "GRUSequence": 3}


def _activations(node: Node) -> list[Act] | None:
    names = node.activations or list(node.default_activations)
    if node.activations_alpha or node.activations_beta or any(n.lower() not in _ACTS for n in names):
        return None
    return [_ACTS[n.lower()] for n in names]


def _clipper(clip: float) -> Act:
    return (lambda t: t.clamp(-clip, clip)) if clip > 0 else (lambda t: t)


def make_step(node: Node) -> Step | None:
    """The node's recurrence, or None for activations PyTorch has no plain kernel for."""
    acts = _activations(node)
    if acts is None:
        return None
    cl = _clipper(node.clip)
    if node.type_name.startswith("LSTM"):
        f, g, h_act = acts

        def lstm(xw, h, c, R, rb):  # noqa: ANN001, ANN202 - tensors
            fg, ig, cg, og = (cl(t) for t in (xw + h @ R.T).chunk(4, dim=-1))
            c = f(fg) * c + f(ig) * g(cg)
            return f(og) * h_act(c), c

        return lstm
    if node.type_name.startswith("GRU"):
        f, g = acts
        lbr = node.linear_before_reset

        def gru(xw, h, c, R, rb):  # noqa: ANN001, ANN202 - tensors
            hid = h.shape[-1]
            xz, xr, xh = xw.chunk(3, dim=-1)
            hz, hr = (h @ R[:2 * hid].T).chunk(2, dim=-1)
            z, r = f(cl(xz + hz)), f(cl(xr + hr))
            rh = R[2 * hid:]
            hh = g(cl(xh + r * (h @ rh.T + rb) if lbr else xh + (r * h) @ rh.T))
            return (1 - z) * hh + z * h, None

        return gru
    act = acts[0]
    return lambda xw, h, c, R, rb: (act(cl(xw + h @ R.T)), None)


def _biases(node: Node, B: torch.Tensor | None, hidden: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the bias added to the input projection, GRU's recurrent bias of the hidden gate) from ``B``."""
    gates = _GATES.get(node.type_name, 1)
    if B is None:
        B = torch.zeros(gates * hidden, dtype=x.dtype, device=x.device)
    rb = B[..., gates * hidden:] if getattr(node, "linear_before_reset", False) else B[..., :0]
    return B[..., :gates * hidden], rb


def _recurrence(node: Node) -> tuple[Step, int] | None:
    """(the step, how many states it carries) of a float recurrent node it covers, else None."""
    step = make_step(node)
    if step is None or not float_node(node, 2):
        return None
    return step, 2 if node.type_name.startswith("LSTM") else 1


@gpu_kernel("RNNCell", "GRUCell", "LSTMCell")
def cell(node: Node, device: torch.device) -> GpuKernel | None:
    found = _recurrence(node)
    if found is None:
        return None
    step, states = found

    def run(inputs: list) -> list:
        x, hc = inputs[0], inputs[1:1 + states]
        W, R = inputs[1 + states:3 + states]
        b, rb = _biases(node, inputs[3 + states] if len(inputs) > 3 + states else None, R.shape[-1], x)
        h, c = step(torch.addmm(b, x, W.T), hc[0], hc[-1], R, rb)
        return [h] if c is None else [h, c]

    return GpuKernel(run, f"cublas_{node.type_name.lower()}")


@gpu_kernel("RNNSequence", "GRUSequence", "LSTMSequence")
def sequence(node: Node, device: torch.device) -> GpuKernel | None:
    found = _recurrence(node)
    if found is None:
        return None
    step, states = found
    reverses = directions(node.direction)

    def run(inputs: list) -> list:
        x, init = inputs[0], inputs[1:1 + states]
        lens, W, R, B = inputs[1 + states:5 + states]
        seq = x.shape[1]
        ys, finals = [], []
        for d, reverse in enumerate(reverses):
            b, rb = _biases(node, B[d], R.shape[-1], x)
            xw = torch.matmul(x, W[d].T) + b  # [batch, seq, gates * hidden]: every step's input projection
            h, c = init[0][:, d], init[-1][:, d]
            y = []
            for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
                live = (lens > t).unsqueeze(1)
                nh, nc = step(xw[:, t], h, c, R[d], rb)
                h = torch.where(live, nh, h)
                c = torch.where(live, nc, c) if nc is not None else c
                y.append(torch.where(live, nh, torch.zeros((), dtype=nh.dtype, device=nh.device)))
            ys.append(torch.stack(y[::-1] if reverse else y, dim=1))
            finals.append((h, c))
        outs = [torch.stack(ys, dim=1), torch.stack([f[0] for f in finals], dim=1)]
        return outs + [torch.stack([f[1] for f in finals], dim=1)] if states == 2 else outs

    return GpuKernel(run, f"cublas_{node.type_name.lower()}")
