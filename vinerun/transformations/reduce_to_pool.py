"""ReduceMean over the spatial axes of a 4-D tensor becomes a global AvgPool (as OpenVINO's
ConvertReduceMeanToPooling does).

Exporters write global average pooling either way (``GlobalAveragePool`` or ``ReduceMean(axes=[2, 3])``, e.g.
the squeeze-excitation blocks of EfficientNet / MobileNetV3); as a pooling it runs the pooling kernel, reads
channels-last convolution outputs without a transposition and stays in a native segment. Matched: a float
ReduceMean whose constant axes are exactly {2, 3} of a rank-4 input with static height and width; with
``keep_dims`` false a Squeeze of axes 2 and 3 follows the pool.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ops.pooling import AvgPool
from vinerun.ops.reshape import Squeeze
from vinerun.transformations.pass_infra import InPlacePass, PassResult

_FLOATS = {"f32", "f16", "bf16", "f64"}


def global_pool_size(node: Node) -> tuple[int, int] | None:
    """(height, width) when ``node`` is a ReduceMean this pass turns into a pooling, else None."""
    if node.type_name != "ReduceMean" or node.get_input_element_type(0).get_type_name() not in _FLOATS:
        return None
    shape = node.get_input_partial_shape(0)
    axes = node.const_input(1)
    if axes is None or shape.rank.is_dynamic or shape.rank.get_length() != 4:
        return None
    if sorted({int(a) % 4 for a in np.asarray(axes).reshape(-1)}) != [2, 3] or np.asarray(axes).size != 2:
        return None
    h, w = shape[2], shape[3]
    if not (h.is_static and w.is_static) or h.get_length() == 0 or w.get_length() == 0:
        return None
    return h.get_length(), w.get_length()


class ReduceMeanToPool(InPlacePass):
    """Replace each spatial ReduceMean of a 4-D tensor with a global AvgPool (and a Squeeze without keep_dims).

    >>> ReduceMeanToPool()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            size = global_pool_size(node)
            if size is None:
                continue
            keep = bool(node.keep_dims)  # type: ignore[attr-defined]
            name = node.friendly_name
            pool = AvgPool(node.input_value(0), strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=list(size),
                           name=name if keep else f"{name}/pool")
            out = pool if keep else Squeeze(pool, Constant(np.array([2, 3], np.int64)), name=name)
            replace_output_update_name(node.output(0), out.output(0))
            node.detach()
            modified = True
        return PassResult(model, modified)
