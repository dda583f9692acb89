"""``OPTIMAL_BATCH_SIZE`` and ``MAX_BATCH_SIZE`` of a model on a GPU (what BATCH and the Core's automatic batching
read), from the model's compute and memory need at batch 1 and the device's memory.

MAX: the largest power of two whose activations and weights fit in 80% of the device's memory (activations
counted as every value of the graph alive at once: an upper bound). OPTIMAL: the smallest power of two that gives
the device at least :data:`SATURATING_FLOPS` per inference (a small batch-1 network leaves most of a GPU idle),
within MAX and :data:`LIMIT`.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.model import Model
from vinerun.plugins.gpu import device_info
from vinerun.plugins.gpu.backend import GpuDevice

#: floating-point operations per inference that keep a data-centre GPU's units busy
SATURATING_FLOPS = 2e10
#: the largest batch either property reports
LIMIT = 256


def _static_size(shape: object) -> int | None:
    if not shape.is_static:  # type: ignore[attr-defined]
        return None
    return int(np.prod(shape.to_shape(), dtype=np.int64)) if len(shape) else 1  # type: ignore[attr-defined]


def model_need(model: Model) -> tuple[int, int, float]:
    """(weight bytes, activation bytes per item, flops per item), from the static shapes (dynamic dims as 1)."""
    weights = acts = 0
    flops = 0.0
    for node in model.get_ordered_ops():
        if node.type_name == "Constant":
            weights += int(node.get_value().nbytes)
            continue
        for i in range(node.get_output_size()):
            n = _static_size(node.get_output_partial_shape(i)) or 0
            acts += n * max(node.get_output_element_type(i).size, 1)
        if node.type_name in ("Convolution", "GroupConvolution", "MatMul") and node.get_input_size() >= 2:
            out = _static_size(node.get_output_partial_shape(0)) or 0
            w = node.get_input_partial_shape(1)
            if w.is_static and len(w) >= 2:
                dims = w.to_shape()
                if node.type_name == "MatMul":
                    k = dims[-1] if node.get_attributes().get("transpose_b") else dims[-2]
                elif node.type_name == "GroupConvolution":
                    k = int(np.prod(dims[2:]))
                else:
                    k = int(np.prod(dims[1:]))
                flops += 2.0 * out * k
    return weights, acts, flops


def _items(model: Model) -> int:
    """The batch the model's inputs have now (1 when dynamic)."""
    shape = model.get_parameters()[0].get_output_partial_shape(0) if model.get_parameters() else None
    if shape is None or shape.rank.is_dynamic or len(shape) == 0 or shape[0].is_dynamic:
        return 1
    return max(shape[0].get_length(), 1)


def max_batch_size(model: Model, device: GpuDevice) -> int:
    weights, acts, _ = model_need(model)
    per_item = max(acts // _items(model), 1)
    room = 0.8 * device_info.total_memory(device) - weights
    batch = 1
    while batch * 2 <= LIMIT and per_item * batch * 2 <= room:
        batch *= 2
    return batch


def optimal_batch_size(model: Model, device: GpuDevice) -> int:
    if device.kind == "cpu":
        return 1  # the test-only stand-in is PyTorch's CPU device: batching gains nothing there (as for CPU)
    _, _, flops = model_need(model)
    per_item = max(flops / _items(model), 1.0)
    limit = max_batch_size(model, device)
    batch = 1
    while batch * 2 <= limit and per_item * batch < SATURATING_FLOPS:
        batch *= 2
    return batch
