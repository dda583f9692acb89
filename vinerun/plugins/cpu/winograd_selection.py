"""WinogradSelection: the f32 3x3 stride-1 FusedConvolutions that run faster as Winograd F(4x4, 3x3) get
``algorithm="winograd"``, and their kernel runs that way (:mod:`.kernels.conv_winograd`).

Runs on the lowered graph (only nodes left in f32 qualify: bf16 keeps the direct convolution) and only under
``EXECUTION_MODE_HINT=PERFORMANCE``: Winograd's rounding differs from a direct convolution's by a few f32 ulps
of the output's range, which ``ACCURACY`` does not allow.

>>> WinogradSelection()(model).modified  # doctest: +SKIP
True
"""

from __future__ import annotations

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.plugins.cpu.kernels import conv_winograd
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def chosen(node: Node) -> bool:
    """Whether ``node`` (a FusedConvolution) computes what the Winograd kernel does, where it pays."""
    x, w = node.get_input_partial_shape(0), node.input_value(1)
    if (node.conv_type != "Convolution" or node.get_input_element_type(0) != Type.f32  # type: ignore[attr-defined]
            or node.get_output_element_type(0) != Type.f32 or not x.is_static or x.rank.get_length() != 4
            or w.node.type_name != "Constant"):
        return False
    size = [int(d) for d in x.to_shape()]
    w_shape = tuple(int(d) for d in w.get_shape())
    pads_begin, pads_end = node.explicit_pads(size[2:], list(w_shape[2:]))  # type: ignore[attr-defined]
    strides, dilations, _, _ = node.spatial_attrs(2)  # type: ignore[attr-defined]
    return (pads_begin == pads_end and conv_winograd.geometry_fits(w_shape, strides, dilations, pads_begin)
            and conv_winograd.pays(tuple(size), w_shape[0]))


class WinogradSelection(InPlacePass):
    """Mark the convolutions to run as Winograd F(4x4, 3x3) (a no-op without the C kernels)."""

    def call(self, model: Model) -> PassResult:
        modified = False
        if not conv_winograd.available():
            return PassResult(model, modified)
        for node in model.get_ordered_ops():
            if node.type_name == "FusedConvolution" and node.algorithm != "winograd" and chosen(node):
                node.algorithm = "winograd"  # type: ignore[attr-defined]
                modified = True
        return PassResult(model, modified)
