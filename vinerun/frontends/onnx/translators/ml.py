"""ai.onnx.ml ops -> vinerun.ops.ml / tree_ensemble."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops.ml import ArrayFeatureExtractor, Binarizer, LabelEncoder
from vinerun.ops.tree_ensemble import AGGREGATES, POST_TRANSFORMS, TreeEnsemble

ML = "ai.onnx.ml"


def _label_side(ctx, side: str) -> np.ndarray | None:
    if ctx.has_attr(f"{side}_tensor"):
        t = np.asarray(ctx.attr(f"{side}_tensor"))
        if t.dtype.kind in "OUS":
            text = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in t.reshape(-1)]
            return np.array(text, dtype=object)
        return t.reshape(-1)
    for suffix, dtype in (("strings", object), ("int64s", np.int64), ("floats", np.float32)):
        if ctx.has_attr(f"{side}_{suffix}"):
            return np.array(ctx.attr(f"{side}_{suffix}"), dtype=dtype)
    return None


@onnx_op("LabelEncoder", domain=ML, since=2)
def label_encoder(ctx):
    keys, values = _label_side(ctx, "keys"), _label_side(ctx, "values")
    if keys is None or values is None:
        raise ctx.unsupported("LabelEncoder needs keys_* and values_* attributes")
    if ctx.has_attr("default_tensor"):
        default = np.asarray(ctx.attr("default_tensor")).reshape(-1)[:1]
    elif values.dtype == object:
        default = np.array([ctx.attr("default_string", "_Unused")], dtype=object)
    elif values.dtype.kind in "iu":
        default = np.array([ctx.attr("default_int64", -1)], dtype=values.dtype)
    else:
        default = np.array([ctx.attr("default_float", -0.0)], dtype=values.dtype)
    return LabelEncoder(ctx.input(0), keys=keys, values=values, default=default.astype(values.dtype)).output(0)


@onnx_op("LabelEncoder", domain=ML, since=1)
def label_encoder_v1(ctx):
    """Opset 1: strings -> their index in ``classes_strings``, or int64 indices -> those strings."""
    classes = np.array(ctx.attr("classes_strings", []), dtype=object)
    index = np.arange(len(classes), dtype=np.int64)
    if ctx.input(0).element_type.get_type_name() == "string":
        keys, values = classes, index
        default = np.array([ctx.attr("default_int64", -1)], dtype=np.int64)
    else:
        keys, values = index, classes
        default = np.array([ctx.attr("default_string", "_Unused")], dtype=object)
    return LabelEncoder(ctx.input(0), keys=keys, values=values, default=default).output(0)


@onnx_op("ArrayFeatureExtractor", domain=ML)
def array_feature_extractor(ctx):
    return ArrayFeatureExtractor(ctx.input(0), ctx.input(1)).output(0)


@onnx_op("Binarizer", domain=ML)
def binarizer(ctx):
    return Binarizer(ctx.input(0), threshold=ctx.attr("threshold", 0.0)).output(0)


def _floats(ctx, name: str) -> list[float] | None:
    v = ctx.attr(name, None)
    return None if v is None else [float(x) for x in np.asarray(v, dtype=np.float64).reshape(-1)]


@onnx_op("TreeEnsemble", domain=ML, since=5)
def tree_ensemble(ctx):
    modes = ctx.attr("nodes_modes")
    return TreeEnsemble(
        ctx.input(0), aggregate_function=AGGREGATES[ctx.attr("aggregate_function", 1)],
        post_transform=POST_TRANSFORMS[ctx.attr("post_transform", 0)], n_targets=ctx.attr("n_targets"),
        tree_roots=ctx.attr("tree_roots"), nodes_featureids=ctx.attr("nodes_featureids"),
        nodes_modes=[int(m) for m in np.asarray(modes).reshape(-1)], nodes_splits=_floats(ctx, "nodes_splits"),
        nodes_truenodeids=ctx.attr("nodes_truenodeids"), nodes_trueleafs=ctx.attr("nodes_trueleafs"),
        nodes_falsenodeids=ctx.attr("nodes_falsenodeids"), nodes_falseleafs=ctx.attr("nodes_falseleafs"),
        nodes_missing_value_tracks_true=ctx.attr("nodes_missing_value_tracks_true", None),
        membership_values=_floats(ctx, "membership_values"), leaf_targetids=ctx.attr("leaf_targetids"),
        leaf_weights=_floats(ctx, "leaf_weights")).output(0)
