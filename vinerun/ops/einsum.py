"""Einsum (opset7): Einstein summation given by an ``equation`` such as ``"bij,bjk->bik"``.

Labels are letters; ``...`` stands for broadcast dimensions. Without ``->`` the output holds the
ellipsis dims followed by the labels that appear once, in alphabetical order (implicit mode).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._widen import widen

ELLIPSIS = "..."


@dataclass
class EinsumSpec:
    """A parsed equation: one label list per input and the output's (``"..."`` is one entry)."""

    inputs: list[list[str]]
    output: list[str]

    def equation(self) -> str:
        return ",".join("".join(t) for t in self.inputs) + "->" + "".join(self.output)


def _labels(term: str, equation: str) -> list[str]:
    if term.count(ELLIPSIS) > 1:
        raise ValidationError(f"einsum term '{term}' of '{equation}' has more than one ellipsis")
    head, _, tail = term.partition(ELLIPSIS)
    out = list(head) + ([ELLIPSIS] if ELLIPSIS in term else []) + list(tail)
    bad = [c for c in out if c != ELLIPSIS and not c.isalpha()]
    if bad:
        raise ValidationError(f"einsum equation '{equation}' has invalid label(s) {bad}")
    return out


def parse_equation(equation: str) -> EinsumSpec:
    """Parse an equation (spaces ignored); implicit outputs are made explicit."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = [_labels(t, equation) for t in lhs.split(",")]
    if arrow:
        output = _labels(rhs, equation)
        known = {c for t in inputs for c in t}
        missing = [c for c in output if c not in known]
        if missing:
            raise ValidationError(f"einsum output labels {missing} of '{equation}' appear in no input")
        if len(set(output)) != len(output):
            raise ValidationError(f"einsum output of '{equation}' repeats a label")
    else:
        counts: dict[str, int] = {}
        for t in inputs:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        output = ([ELLIPSIS] if ELLIPSIS in counts else []) + sorted(
            c for c, n in counts.items() if n == 1 and c != ELLIPSIS)
    return EinsumSpec(inputs, output)


@register_op
class Einsum(Node):
    """Einstein summation of one or more inputs of one element type."""

    type_name, version, num_inputs = "Einsum", "opset7", (1, 1 << 30)
    equation = Attr("str")

    def infer(self) -> list:
        spec = parse_equation(self.equation)
        if len(spec.inputs) != self.get_input_size():
            raise ValidationError(f"equation '{self.equation}' names {len(spec.inputs)} inputs, "
                                  f"got {self.get_input_size()}")
        et = self.get_input_element_type(0)
        for i in range(1, self.get_input_size()):
            merged = et.merge(self.get_input_element_type(i))
            if merged is None:
                raise ValidationError(f"input element types differ: {et.get_type_name()} and "
                                      f"{self.get_input_element_type(i).get_type_name()}")
            et = merged
        label_dims: dict[str, Dimension] = {}
        ellipsis = PartialShape([])
        for i, labels in enumerate(spec.inputs):
            shape = self.get_input_partial_shape(i)
            if shape.rank.is_dynamic:
                return [(et, PartialShape.dynamic())]
            dims = list(shape)
            n_named = len([c for c in labels if c != ELLIPSIS])
            if len(dims) != n_named and ELLIPSIS not in labels or len(dims) < n_named:
                raise ValidationError(f"input {i} of rank {len(dims)} does not match term "
                                      f"'{''.join(labels)}' of '{self.equation}'")
            n_ell = len(dims) - n_named
            pos = 0
            for c in labels:
                if c == ELLIPSIS:
                    ellipsis = broadcast_shapes(ellipsis, PartialShape(dims[pos:pos + n_ell]), "einsum ellipsis")
                    pos += n_ell
                    continue
                d = dims[pos]
                pos += 1
                prev = label_dims.get(c)
                if prev is None or prev == 1:
                    label_dims[c] = d
                elif d != 1:
                    merged_d = prev.merge(d)
                    if merged_d is None:
                        raise ValidationError(f"label '{c}' of '{self.equation}' has sizes {prev} and {d}")
                    label_dims[c] = merged_d
        out: list[Dimension] = []
        for c in spec.output:
            out.extend(list(ellipsis) if c == ELLIPSIS else [label_dims[c]])
        return [(et, PartialShape(out))]

    def evaluate(self, inputs: list) -> list:
        out = np.einsum(parse_equation(self.equation).equation(), *[widen(x) for x in inputs])
        return [np.asarray(out).astype(inputs[0].dtype, copy=False)]
