"""A constant ``Pad`` before a convolution or pooling becomes that op's own padding (as OpenVINO's PadFusion).

Exporters from TensorFlow/Keras write "SAME" padding of strided layers as an explicit ``Pad`` (often
asymmetric: one row/column at the end) followed by an unpadded convolution; PyTorch's ``ZeroPad2d`` /
``F.pad`` exports the same way. Run as a separate op, the Pad copies the whole tensor (and breaks the
channels-last chain of the convolutions around it); folded, the convolution reads its input once.

Folded, into each consumer that reads the Pad's output as its data input:
- ``Convolution`` / ``GroupConvolution``: a zero pad value.
- ``AvgPool`` (floor rounding): a zero pad value, when the pool has no pads of its own or counts them
  (``exclude_pad`` false); the pool then counts the pads (they were real zeros).
- ``MaxPool`` (floor rounding, indices unused): a pad value of ``-inf``, or zero on a value that cannot be
  negative (after ReLU; a window always holds at least one real element, so the maximum is the same).
Only spatial axes may be padded, by constant non-negative amounts, in ``constant`` mode. A consumer with
``auto_pad`` same_upper/same_lower keeps its Pad. The Pad goes once no consumer reads it.
"""

from __future__ import annotations

import math

import numpy as np

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.transformations.fusions import CONVOLUTIONS
from vinerun.transformations.pass_infra import InPlacePass, PassResult

POOLS = frozenset({"AvgPool", "MaxPool"})
#: producers whose outputs are never negative (zero padding before a MaxPool is then harmless)
NON_NEGATIVE = frozenset({"Relu", "Sigmoid", "Abs", "Exp", "SoftPlus", "HSigmoid"})


def spatial_pads(pad: Node) -> tuple[list[int], list[int]] | None:
    """(begin, end) over the spatial axes of a constant-mode Pad that pads nothing else, else None."""
    if pad.type_name != "Pad" or pad.pad_mode != "constant":  # type: ignore[attr-defined]
        return None
    begin, end = pad.const_input(1), pad.const_input(2)
    rank = pad.get_input_partial_shape(0).rank
    if begin is None or end is None or rank.is_dynamic or rank.get_length() < 3:
        return None
    begin, end = [int(v) for v in np.asarray(begin).reshape(-1)], [int(v) for v in np.asarray(end).reshape(-1)]
    if len(begin) != rank.get_length() or len(end) != rank.get_length() or min(begin + end) < 0:
        return None
    if begin[:2] != [0, 0] or end[:2] != [0, 0] or not any(begin[2:] + end[2:]):
        return None
    return begin[2:], end[2:]


def pad_value(pad: Node) -> float | None:
    """The constant pad value (0 when input 3 is absent), or None when it is not a constant scalar."""
    if len(pad.input_values()) < 4 or pad.input_value(3) is None:
        return 0.0
    value = pad.const_input(3)
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value, np.float64).reshape(()))


def _own_pads(node: Node, n: int) -> tuple[list[int], list[int]] | None:
    """The consumer's explicit pads (zeros for auto_pad valid), or None for same_upper / same_lower."""
    auto = str(node.auto_pad).lower()  # type: ignore[attr-defined]
    if auto in ("same_upper", "same_lower"):
        return None
    if auto == "valid":
        return [0] * n, [0] * n
    if node.type_name in CONVOLUTIONS:
        _, _, pb, pe = node.spatial_attrs(n)  # type: ignore[attr-defined]
    else:
        *_, pb, pe = node.geometry(n)  # type: ignore[attr-defined]
    return list(pb), list(pe)


def _foldable(consumer: Node, pad: Node, value: float) -> bool:
    t = consumer.type_name
    if t in CONVOLUTIONS:
        return value == 0.0
    if t not in POOLS or consumer.rounding_type != "floor":  # type: ignore[attr-defined]
        return False  # ceil rounding drops windows that start in the end pads: not the same as real zeros
    if t == "AvgPool":
        own = _own_pads(consumer, len(consumer.get_input_partial_shape(0)) - 2)
        counts_pads = not consumer.exclude_pad or (own is not None and not any(own[0] + own[1]))  # type: ignore
        return value == 0.0 and counts_pads
    if consumer.get_output_size() > 1 and consumer.output(1).get_target_inputs():
        return False  # MaxPool-8's indices point into the padded tensor
    return value == -math.inf or (value == 0.0 and never_negative(pad.input_value(0).node))


def never_negative(node: Node) -> bool:
    """Whether ``node``'s output cannot hold a negative value (by its type; a Clamp by its lower bound)."""
    if node.type_name == "Clamp":
        return float(node.min) >= 0.0  # type: ignore[attr-defined]
    return node.type_name in NON_NEGATIVE


class PadFusion(InPlacePass):
    """Fold constant spatial Pads into the convolutions and poolings that read them.

    >>> PadFusion()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for pad in model.get_ordered_ops():
            pads = spatial_pads(pad)
            value = pad_value(pad) if pads is not None else None
            if pads is None or value is None:
                continue
            for target in list(pad.output(0).get_target_inputs()):
                consumer = target.get_node()
                if target.get_index() != 0 or not _foldable(consumer, pad, value):
                    continue
                own = _own_pads(consumer, len(pads[0]))
                if own is None:
                    continue
                consumer.pads_begin = [a + b for a, b in zip(own[0], pads[0], strict=True)]  # type: ignore
                consumer.pads_end = [a + b for a, b in zip(own[1], pads[1], strict=True)]  # type: ignore
                consumer.auto_pad = "explicit"  # type: ignore[attr-defined]
                if consumer.type_name == "AvgPool":
                    consumer.exclude_pad = False  # type: ignore[attr-defined]
                target.replace_source_output(pad.input_value(0))
                consumer.validate_and_infer_types()  # the same output shape: the pads moved, not the window
                modified = True
            if not pad.output(0).get_target_inputs():
                pad.detach()
        return PassResult(model, modified)
