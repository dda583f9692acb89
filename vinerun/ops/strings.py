"""ONNX string ops and TfIdfVectorizer (ONNX-only, version "onnx"). Strings are object arrays of ``str``."""

from __future__ import annotations

import re

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


def _strings(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == object else x.astype(str).astype(object)


@register_op
class StringConcat(Node):
    """Element-wise concatenation of two string tensors (NumPy broadcasting)."""

    type_name, version, num_inputs = "StringConcat", "onnx", (2, 2)

    def infer(self) -> list:
        return [(Type.string, broadcast_shapes(self.get_input_partial_shape(0), self.get_input_partial_shape(1)))]

    def evaluate(self, inputs: list) -> list:
        a, b = (_strings(np.asarray(v)) for v in inputs)
        return [np.asarray(np.add(a, b), dtype=object).reshape(np.broadcast_shapes(a.shape, b.shape))]


@register_op
class StringSplit(Node):
    """Splits each string at ``delimiter`` (whitespace runs when empty) at most ``maxsplit`` times.

    Outputs the pieces, padded with "" to the longest split (shape ``X.shape + [max]``), and the
    number of pieces of each string (i64, shape ``X.shape``).
    """

    type_name, version, num_inputs = "StringSplit", "onnx", (1, 1)
    delimiter = Attr("str", "")
    maxsplit = Attr("int", -1)

    def infer(self) -> list:
        ps = self.get_input_partial_shape(0)
        pieces = PartialShape.dynamic() if ps.rank.is_dynamic else PartialShape([*ps, Dimension()])
        return [(Type.string, pieces), (Type.i64, ps)]

    def evaluate(self, inputs: list) -> list:
        x = _strings(np.asarray(inputs[0]))
        sep = self.delimiter or None
        parts = [s.split(sep, self.maxsplit) for s in x.reshape(-1)]
        width = max((len(p) for p in parts), default=0)
        out = np.full((len(parts), width), "", dtype=object)
        for i, p in enumerate(parts):
            out[i, :len(p)] = p
        counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
        return [out.reshape(*x.shape, width), counts]


@register_op
class StringNormalizer(Node):
    """Drops ``stopwords`` from a [C] or [1, C] string tensor, then changes case (LOWER / UPPER / NONE).

    If every string is dropped the output is a single empty string.
    """

    type_name, version, num_inputs = "StringNormalizer", "onnx", (1, 1)
    case_change_action = Attr("str", "NONE")
    is_case_sensitive = Attr("bool", False)
    locale = Attr("str", "")
    stopwords = Attr("strs", ())

    def infer(self) -> list:
        if self.case_change_action not in ("LOWER", "UPPER", "NONE"):
            raise ValidationError(f"case_change_action must be LOWER, UPPER or NONE, got {self.case_change_action!r}")
        ps = self.get_input_partial_shape(0)
        if ps.rank.is_static and not (len(ps) == 1 or (len(ps) == 2 and ps[0].compatible(1))):
            raise ValidationError(f"the input must have shape [C] or [1, C], got {ps}")
        rank = 1 if ps.rank.is_dynamic else len(ps)
        return [(Type.string, PartialShape([1] * (rank - 1) + [Dimension()]))]

    def evaluate(self, inputs: list) -> list:
        x = _strings(np.asarray(inputs[0]))
        if self.is_case_sensitive:
            stop = set(self.stopwords)
            kept = [s for s in x.reshape(-1) if s not in stop]
        else:
            stop = {w.casefold() for w in self.stopwords}
            kept = [s for s in x.reshape(-1) if s.casefold() not in stop]
        if self.case_change_action == "LOWER":
            kept = [s.lower() for s in kept]
        elif self.case_change_action == "UPPER":
            kept = [s.upper() for s in kept]
        out = np.array(kept or [""], dtype=object)
        return [out.reshape(1, -1) if x.ndim == 2 else out]


@register_op
class RegexFullMatch(Node):
    """True where the whole string matches ``pattern`` (Python ``re`` syntax, close to RE2 for common patterns)."""

    type_name, version, num_inputs = "RegexFullMatch", "onnx", (1, 1)
    pattern = Attr("str")

    def infer(self) -> list:
        try:
            re.compile(self.pattern)
        except re.error as e:
            raise ValidationError(f"invalid pattern {self.pattern!r}: {e}") from e
        return [(Type.boolean, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = _strings(np.asarray(inputs[0]))
        rx = re.compile(self.pattern)
        flat = [rx.fullmatch(s) is not None for s in x.reshape(-1)]
        return [np.array(flat, dtype=np.bool_).reshape(x.shape)]


@register_op
class TfIdfVectorizer(Node):
    """Counts the pool's n-grams (with up to ``max_skip_count`` skips) in each row of a [C] or [N, C] input.

    ``ngram_counts[i]`` is where the (i+1)-grams start in the pool; n-gram ``k`` of the pool is
    reported at ``Y[..., ngram_indexes[k]]``, as a count (TF), a 0/1 presence times its weight
    (IDF) or a count times its weight (TFIDF).
    """

    type_name, version, num_inputs = "TfIdfVectorizer", "onnx", (1, 1)
    max_gram_length = Attr("int")
    min_gram_length = Attr("int")
    max_skip_count = Attr("int")
    mode = Attr("str")
    ngram_counts = Attr("ints")
    ngram_indexes = Attr("ints")
    pool_int64s = Attr("ints", None)
    pool_strings = Attr("strs", None)
    weights = Attr("floats", None)

    def _pool(self) -> dict[tuple, int]:
        pool = self.pool_int64s if self.pool_int64s is not None else self.pool_strings
        if pool is None:
            raise ValidationError("one of pool_int64s or pool_strings is required")
        table: dict[tuple, int] = {}
        starts = list(self.ngram_counts) + [len(pool)]
        k = 0
        for size, (lo, hi) in enumerate(zip(starts[:-1], starts[1:], strict=False), start=1):
            for at in range(lo, hi, size):
                table[tuple(pool[at:at + size])] = k
                k += 1
        if k != len(self.ngram_indexes):
            raise ValidationError(f"the pool holds {k} n-grams but ngram_indexes has {len(self.ngram_indexes)}")
        return table

    def infer(self) -> list:
        if self.mode not in ("TF", "IDF", "TFIDF"):
            raise ValidationError(f"mode must be TF, IDF or TFIDF, got {self.mode!r}")
        if not 1 <= self.min_gram_length <= self.max_gram_length:
            raise ValidationError(f"need 1 <= min_gram_length ({self.min_gram_length}) <= "
                                  f"max_gram_length ({self.max_gram_length})")
        self._pool()
        width = Dimension(max(self.ngram_indexes, default=-1) + 1)
        ps = self.get_input_partial_shape(0)
        if ps.rank.is_dynamic:
            return [(Type.f32, PartialShape.dynamic())]
        if len(ps) not in (1, 2):
            raise ValidationError(f"the input must be 1-D or 2-D, got {ps}")
        return [(Type.f32, PartialShape([width] if len(ps) == 1 else [ps[0], width]))]

    def _row_counts(self, row: list, table: dict[tuple, int]) -> np.ndarray:
        counts = np.zeros(len(self.ngram_indexes), dtype=np.float32)
        c = len(row)
        for n in range(self.min_gram_length, self.max_gram_length + 1):
            for skip in range(self.max_skip_count + 1 if n > 1 else 1):
                step = skip + 1
                for start in range(c - step * (n - 1)):
                    k = table.get(tuple(row[start:start + step * (n - 1) + 1:step]))
                    if k is not None:
                        counts[k] += 1
        return counts

    def evaluate(self, inputs: list) -> list:
        x = np.asarray(inputs[0])
        table = self._pool()
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        width = max(self.ngram_indexes, default=-1) + 1
        weights = np.asarray(self.weights if self.weights is not None else [1.0] * len(self.ngram_indexes),
                             dtype=np.float32)
        out = np.zeros((rows.shape[0], width), dtype=np.float32)
        for r, row in enumerate(rows):
            counts = self._row_counts(row.tolist(), table)
            if self.mode == "IDF":
                counts = np.minimum(counts, 1) * weights
            elif self.mode == "TFIDF":
                counts = counts * weights
            np.add.at(out[r], np.asarray(self.ngram_indexes, dtype=np.int64), counts)
        return [out.reshape(width) if x.ndim == 1 else out]
