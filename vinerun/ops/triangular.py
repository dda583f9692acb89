"""Matrix-structure ops: the ONNX-only Trilu and ReverseSequence (opset1)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._base import normalize_axis
from vinerun.ops._shape_helpers import check_index_type, rank_of


@register_op
class Trilu(Node):
    """ONNX Trilu: keep the upper (``upper``) or lower triangle of the last two dims, offset by k (input 1)."""

    type_name, version, num_inputs = "Trilu", "onnx", (1, 2)
    upper = Attr("bool", True)

    def infer(self) -> list:
        r = rank_of(self.get_input_partial_shape(0))
        if r is not None and r < 2:
            raise ValidationError(f"the input must have rank >= 2, got {r}")
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        k = 0 if len(inputs) < 2 or inputs[1] is None else int(np.asarray(inputs[1]).reshape(-1)[0])
        rows, cols = x.shape[-2:]
        i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
        keep = (j - i >= k) if self.upper else (j - i <= k)
        return [np.where(keep, x, np.zeros((), x.dtype)).astype(x.dtype, copy=False)]


@register_op
class ReverseSequence(Node):
    """Reverse the first ``seq_lengths[b]`` elements along ``seq_axis`` for each batch b along ``batch_axis``."""

    type_name, version, num_inputs = "ReverseSequence", "opset1", (2, 2)
    batch_axis = Attr("int", 0)
    seq_axis = Attr("int", 1)

    def infer(self) -> list:
        check_index_type(self, 1, "seq_lengths")
        ps = self.get_input_partial_shape(0)
        r = rank_of(ps)
        if r is not None:
            b, s = normalize_axis(self.batch_axis, r, self), normalize_axis(self.seq_axis, r, self)
            if b == s:
                raise ValidationError(f"batch_axis and seq_axis must differ, both are {b}")
        return [(self.get_input_element_type(0), ps)]

    def evaluate(self, inputs: list) -> list:
        x, lengths = inputs[0], np.asarray(inputs[1]).reshape(-1).astype(np.int64)
        b, s = normalize_axis(self.batch_axis, x.ndim, self), normalize_axis(self.seq_axis, x.ndim, self)
        if lengths.size != x.shape[b]:
            raise ValidationError(f"seq_lengths has {lengths.size} values for a batch of {x.shape[b]}")
        out = np.moveaxis(x.copy(), (b, s), (0, 1))
        src = np.moveaxis(x, (b, s), (0, 1))
        for k, n in enumerate(lengths):
            n = int(min(max(n, 0), x.shape[s]))
            out[k, :n] = src[k, :n][::-1]
        return [np.array(np.moveaxis(out, (0, 1), (b, s)), order="C")]
