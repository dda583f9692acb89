"""A 2-D convolution over a width of 1 becomes a 1-D convolution (Squeeze, Convolution, Unsqueeze).

Exporters write 1-D convolutions over sequences as 2-D ones on ``[N, C, L, 1]`` with a ``(k, 1)`` kernel
(Keras/TensorFlow models converted to ONNX, e.g. the magika content-type classifier). oneDNN's 2-D kernels
block along the width, so a width of 1 leaves them mostly idle: a ``[1, 256, 512, 1]`` x ``(5, 1)`` convolution
measured 5.9 ms as 2-D and 1.8 ms as 1-D. Squeezing and unsqueezing the unit axis are views.

Matched: Convolution / GroupConvolution with constant filters, a static input width of 1 (and a height that is
not also 1), a kernel width of 1 and no padding along the width (the output width is then 1 too). The
Unsqueeze takes the convolution's names.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.reshape import Squeeze, Unsqueeze
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _width_one(conv: Node) -> np.ndarray | None:
    """The filters without their width axis when ``conv`` is a 2-D convolution over a width of 1, else None."""
    if conv.type_name not in ("Convolution", "GroupConvolution"):
        return None
    shape = conv.get_input_partial_shape(0)
    w = conv.const_input(1)
    if w is None or shape.rank.is_dynamic or shape.rank.get_length() != 4 or not shape[3].is_static:
        return None
    if shape[3].get_length() != 1 or w.shape[-1] != 1 or str(conv.auto_pad).lower() not in ("explicit", "notset",
                                                                                          "valid"):
        return None
    if shape[2].is_static and shape[2].get_length() == 1:
        return None  # 1 x 1 (after a global pool): nothing along either axis to block, leave it 2-D
    _, _, pb, pe = conv.spatial_attrs(2)  # type: ignore[attr-defined]
    if pb[1] != 0 or pe[1] != 0:
        return None
    return w[..., 0]


class ConvWidthOneTo1D(InPlacePass):
    """Rewrite each 2-D convolution over a width of 1 as a 1-D one between a Squeeze and an Unsqueeze.

    >>> ConvWidthOneTo1D()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            filters = _width_one(node)
            if filters is None:
                continue
            strides, dilations, pb, pe = node.spatial_attrs(2)  # type: ignore[attr-defined]
            auto = "explicit" if str(node.auto_pad).lower() == "notset" else node.auto_pad  # type: ignore
            axis = Constant(np.array([3], np.int64))
            squeezed = Squeeze(node.input_value(0), axis, name=f"{node.friendly_name}/as_1d")
            cls = GroupConvolution if node.type_name == "GroupConvolution" else Convolution
            conv = cls(squeezed, Constant(np.ascontiguousarray(filters)), strides=strides[:1],
                       dilations=dilations[:1], pads_begin=pb[:1], pads_end=pe[:1], auto_pad=auto,
                       name=f"{node.friendly_name}/1d")
            out = Unsqueeze(conv, Constant(np.array([3], np.int64)), name=node.friendly_name)
            replace_output_update_name(node.output(0), out.output(0))
            node.detach()
            modified = True
        return PassResult(model, modified)
