"""A small model and helpers shared by the GPU integration tests (stand-in and real GPU)."""

from __future__ import annotations

from typing import Any

import numpy as np

import vinerun as ov
import vinerun.opset13 as ops

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
X = np.linspace(-2, 2, 8, dtype=np.float32).reshape(1, 8)


def mlp(batch: int = 1) -> ov.Model:
    """x [batch, 8] -> matmul -> tanh (named "t") -> relu."""
    rng = np.random.default_rng(0)
    x = ops.parameter([batch, 8], np.float32, name="x")
    w = ops.constant(rng.standard_normal((8, 8)).astype(np.float32) * 0.5)
    y = ops.matmul(x, w, False, False, name="fc")
    y = ops.relu(ops.tanh(y, name="t"), name="act")
    return ov.Model([y], [x], "mlp")


def cpu_outputs(model: ov.Model, x: np.ndarray) -> np.ndarray:
    return ov.Core().compile_model(model, "CPU", F32)([x])[0]


def run_queue(compiled: ov.CompiledModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Every input through an AsyncInferQueue with all of them in flight; outputs in input order."""
    out: list[Any] = [None] * len(inputs)
    queue = ov.AsyncInferQueue(compiled, len(inputs))
    queue.set_callback(lambda request, i: out.__setitem__(i, request.get_output_tensor(0).data.copy()))
    for i, x in enumerate(inputs):
        queue.start_async({"x": x}, i)
    queue.wait_all()
    return out
