"""ONNX string ops and TfIdfVectorizer -> vinerun.ops.strings."""

from __future__ import annotations

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops.strings import (
    RegexFullMatch,
    StringConcat,
    StringNormalizer,
    StringSplit,
    TfIdfVectorizer,
)


@onnx_op("StringConcat", since=20)
def string_concat(ctx):
    return StringConcat(ctx.input(0), ctx.input(1)).output(0)


@onnx_op("StringSplit", since=20)
def string_split(ctx):
    maxsplit = ctx.attr("maxsplit", None)
    node = StringSplit(ctx.input(0), delimiter=ctx.attr("delimiter", ""), maxsplit=-1 if maxsplit is None else maxsplit)
    return node.outputs()


@onnx_op("StringNormalizer", since=10)
def string_normalizer(ctx):
    return StringNormalizer(ctx.input(0), case_change_action=ctx.attr("case_change_action", "NONE"),
                            is_case_sensitive=bool(ctx.attr("is_case_sensitive", 0)), locale=ctx.attr("locale", ""),
                            stopwords=ctx.attr("stopwords", [])).output(0)


@onnx_op("RegexFullMatch", since=20)
def regex_full_match(ctx):
    return RegexFullMatch(ctx.input(0), pattern=ctx.attr("pattern")).output(0)


@onnx_op("TfIdfVectorizer", since=9)
def tfidf_vectorizer(ctx):
    return TfIdfVectorizer(
        ctx.input(0), max_gram_length=ctx.attr("max_gram_length"), min_gram_length=ctx.attr("min_gram_length"),
        max_skip_count=ctx.attr("max_skip_count"), mode=ctx.attr("mode"), ngram_counts=ctx.attr("ngram_counts"),
        ngram_indexes=ctx.attr("ngram_indexes"), pool_int64s=ctx.attr("pool_int64s", None),
        pool_strings=ctx.attr("pool_strings", None), weights=ctx.attr("weights", None)).output(0)
