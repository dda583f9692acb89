"""``OPTIMAL_BATCH_SIZE`` and ``MAX_BATCH_SIZE`` of a model on a GPU (what BATCH and the Core's automatic batching
read), from the model's compute and memory need at batch 1 and the device's memory.

MAX: the largest power of two whose activations and weights fit in 80% of the device's memory (activations
counted as every value of the graph alive at once: an upper bound), at most :data:`LIMIT`. OPTIMAL: the smallest
power of two that gives the device at least :func:`saturating_flops` per inference -- :data:`FLOPS_PER_UNIT` for
each of its multiprocessors (SMs; Xe cores), so a bigger GPU batches more, as OpenVINO's GPU plugin picks larger
batches on big discrete GPUs -- within MAX and :data:`OPTIMAL_LIMIT`. On an H100 (132 SMs): ResNet-50 (8.2 GFLOP
per image) 32, MobileNetV2 (0.6 GFLOP) 64; at the old single figure (2e10 flops) ResNet-50 got 4, whose
executions are too short for the host to keep up with.

>>> optimal_batch_size(resnet50, h100)      # doctest: +SKIP
32
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.model import Model
from vinerun.plugins.gpu import device_info
from vinerun.plugins.gpu.backend import GpuDevice

#: floating-point operations per inference that keep one multiprocessor (SM, Xe core) busy
FLOPS_PER_UNIT = 1.5e9
#: the largest batch MAX_BATCH_SIZE reports
LIMIT = 256
#: the largest batch OPTIMAL_BATCH_SIZE reports: a client keeps batch x the device's requests in flight
OPTIMAL_LIMIT = 64


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


def saturating_flops(device: GpuDevice) -> float:
    """Floating-point operations per execution that keep ``device`` busy: :data:`FLOPS_PER_UNIT` per multiprocessor
    (``GPU_EXECUTION_UNITS_COUNT``: 132 on an H100 -> 2e11)."""
    return FLOPS_PER_UNIT * device_info.execution_units(device)


def optimal_batch_size(model: Model, device: GpuDevice) -> int:
    """The smallest power of two whose execution does :func:`saturating_flops`, within MAX and
    :data:`OPTIMAL_LIMIT`; 1 on the test-only stand-in."""
    if device.kind == "cpu":
        return 1  # the test-only stand-in is PyTorch's CPU device: batching gains nothing there (as for CPU)
    _, _, flops = model_need(model)
    per_item = max(flops / _items(model), 1.0)
    limit = min(max_batch_size(model, device), OPTIMAL_LIMIT)
    target = saturating_flops(device)
    batch = 1
    while batch * 2 <= limit and per_item * batch < target:
        batch *= 2
    return batch
