"""String ops, TfIdfVectorizer, ai.onnx.ml ops, training optimizers and random ops on hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.ml import ArrayFeatureExtractor, Binarizer, LabelEncoder
from vinerun.ops.random import Bernoulli, Multinomial, RandomNormal, RandomUniform, RandomUniformLike
from vinerun.ops.strings import RegexFullMatch, StringConcat, StringNormalizer, StringSplit, TfIdfVectorizer
from vinerun.ops.training import Adagrad, Adam, Momentum
from vinerun.ops.tree_ensemble import TreeEnsemble


def _eval(node, *inputs):
    return node.evaluate(list(inputs))


def _s(*values: str) -> np.ndarray:
    return np.array(values, dtype=object)


def test_string_concat_broadcasts() -> None:
    node = StringConcat(Parameter(Type.string, [2]), Parameter(Type.string, []))
    assert list(node.get_output_partial_shape(0).to_shape()) == [2]
    assert _eval(node, _s("a", "é"), np.array("!", dtype=object))[0].tolist() == ["a!", "é!"]


def test_string_split_pads_and_counts() -> None:
    node = StringSplit(Parameter(Type.string, [2]), delimiter="-", maxsplit=1)
    pieces, counts = _eval(node, _s("a-b-c", "d"))
    assert pieces.tolist() == [["a", "b-c"], ["d", ""]] and counts.tolist() == [2, 1]
    assert counts.dtype == np.int64
    pieces, counts = _eval(StringSplit(Parameter(Type.string, [1])), _s("  x  y "))
    assert pieces.tolist() == [["x", "y"]]


def test_string_normalizer() -> None:
    node = StringNormalizer(Parameter(Type.string, [1, 3]), case_change_action="LOWER", stopwords=["THE"])
    assert _eval(node, np.array([["The", "Cat", "the"]], dtype=object))[0].tolist() == [["cat"]]
    node = StringNormalizer(Parameter(Type.string, [2]), is_case_sensitive=True, stopwords=["a"])
    assert _eval(node, _s("a", "a"))[0].tolist() == [""]
    with pytest.raises(ValidationError):
        StringNormalizer(Parameter(Type.string, [2]), case_change_action="TITLE")


def test_regex_full_match() -> None:
    node = RegexFullMatch(Parameter(Type.string, [3]), pattern=r"a+b?")
    out = _eval(node, _s("aab", "ab c", ""))[0]
    assert out.tolist() == [True, False, False] and out.dtype == np.bool_
    with pytest.raises(ValidationError, match="invalid pattern"):
        RegexFullMatch(Parameter(Type.string, [3]), pattern="(")


def test_tfidf_counts_with_skips() -> None:
    # pool: unigrams [94, 17], bigram [94, 12]; with 2 skips, [94, 12] is found once in the sequence.
    common = dict(min_gram_length=1, max_gram_length=2, ngram_counts=[0, 2], ngram_indexes=[2, 0, 1],
                  pool_int64s=[94, 17, 94, 12])
    x = np.array([94, 17, 36, 12, 28, 17], np.int64)
    tf = TfIdfVectorizer(Parameter(Type.i64, [6]), mode="TF", max_skip_count=2, **common)
    assert list(tf.get_output_partial_shape(0).to_shape()) == [3]
    np.testing.assert_array_equal(_eval(tf, x)[0], [2, 1, 1])
    no_skip = TfIdfVectorizer(Parameter(Type.i64, [6]), mode="TF", max_skip_count=0, **common)
    np.testing.assert_array_equal(_eval(no_skip, x)[0], [2, 0, 1])
    idf = TfIdfVectorizer(Parameter(Type.i64, [1, 6]), mode="IDF", max_skip_count=2, weights=[0.5, 2.0, 3.0],
                          **common)
    np.testing.assert_array_equal(_eval(idf, x.reshape(1, 6))[0], [[2.0, 3.0, 0.5]])


def test_label_encoder_with_nan_key_and_default() -> None:
    node = LabelEncoder(Parameter(Type.f32, [3]), keys=np.array([1.5, np.nan], np.float32),
                        values=_s("x", "nan"), default=_s("?"))
    assert node.get_output_element_type(0) == Type.string
    assert _eval(node, np.array([np.nan, 1.5, 2.0], np.float32))[0].tolist() == ["nan", "x", "?"]


def test_array_feature_extractor_and_binarizer() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    node = ArrayFeatureExtractor(Parameter(Type.f32, [2, 3]), Parameter(Type.i64, [2]))
    assert list(node.get_output_partial_shape(0).to_shape()) == [2, 2]
    np.testing.assert_array_equal(_eval(node, x, np.array([2, 0]))[0], [[2, 0], [5, 3]])
    with pytest.raises(ValidationError, match="out of range"):
        _eval(node, x, np.array([3]))
    out = _eval(Binarizer(Parameter(Type.f32, [2, 3]), threshold=2.5), x)[0]
    assert out.dtype == np.float32 and out.tolist() == [[0, 0, 0], [1, 1, 1]]


def _stump(**kw) -> TreeEnsemble:
    # node 0: x0 <= 1 ? leaf 0 : node 1;  node 1: x1 in {3, 4} ? leaf 1 : leaf 2
    return TreeEnsemble(Parameter(Type.f32, [3, 2]), n_targets=2, tree_roots=[0], nodes_featureids=[0, 1],
                        nodes_modes=[0, 6], nodes_splits=[1.0, 0.0], nodes_truenodeids=[0, 1],
                        nodes_trueleafs=[1, 1], nodes_falsenodeids=[1, 2], nodes_falseleafs=[0, 1],
                        membership_values=[3.0, 4.0], leaf_targetids=[0, 1, 1], leaf_weights=[1.0, 2.0, 5.0], **kw)


def test_tree_ensemble_branches_and_membership() -> None:
    x = np.array([[0, 0], [2, 4], [2, 7]], np.float32)
    node = _stump()
    assert list(node.get_output_partial_shape(0).to_shape()) == [3, 2]
    out = _eval(node, x)[0]
    assert out.dtype == np.float32 and out.tolist() == [[1, 0], [0, 2], [0, 5]]
    logistic = _eval(_stump(post_transform="LOGISTIC"), x)[0]
    np.testing.assert_allclose(logistic[0], 1 / (1 + np.exp(-np.array([1.0, 0.0]))), rtol=1e-6)


def test_adagrad_matches_the_formula() -> None:
    r, t = np.float32(0.1), np.int64(2)
    x, g, h = np.array([1.0], np.float32), np.array([-1.0], np.float32), np.array([2.0], np.float32)
    node = Adagrad(*[Parameter(Type(v.dtype), list(v.shape)) for v in (r, np.asarray(t), x, g, h)],
                   decay_factor=0.5, epsilon=1e-5, norm_coefficient=0.01)
    x_new, h_new = _eval(node, np.asarray(r), np.asarray(t), x, g, h)
    g_reg = 0.01 * 1.0 - 1.0
    h_exp = 2.0 + g_reg ** 2
    assert h_new[0] == pytest.approx(h_exp, rel=1e-6)
    assert x_new[0] == pytest.approx(1.0 - 0.1 / 2.0 * g_reg / (np.sqrt(h_exp) + 1e-5), rel=1e-6)


def test_momentum_and_adam_shapes_and_first_step() -> None:
    scalars = [Parameter(Type.f32, []), Parameter(Type.i64, [])]
    tensors = [Parameter(Type.f32, [2]) for _ in range(4)]
    mom = Momentum(*scalars, *tensors[:3], alpha=0.9, beta=0.5, mode="nesterov")
    x, g, v = np.ones(2, np.float32), np.full(2, 2.0, np.float32), np.zeros(2, np.float32)
    x_new, v_new = _eval(mom, np.float32(0.1), np.int64(0), x, g, v)
    np.testing.assert_allclose(v_new, [2, 2])  # beta is 1 at T = 0
    np.testing.assert_allclose(x_new, 1 - 0.1 * (2 + 0.9 * 2))
    adam = Adam(*scalars, *tensors, alpha=0.9, beta=0.99, epsilon=0.0)
    assert adam.get_output_size() == 3
    x_new, v_new, h_new = _eval(adam, np.float32(0.1), np.int64(1), x, g, v, v)
    # At T = 1 the bias-corrected step is the learning rate times sign(g).
    np.testing.assert_allclose(x_new, 1 - 0.1, rtol=1e-5)
    with pytest.raises(ValidationError, match="groups"):
        Adam(*scalars, *tensors[:3])


def test_random_ops_shape_dtype_and_seed() -> None:
    shape = Constant(np.array([2, 3], np.int64))
    seeded = RandomUniform(shape, Constant(np.float32(2)), Constant(np.float32(3)), output_type=Type.f16,
                           global_seed=1, op_seed=2)
    assert list(seeded.get_output_partial_shape(0).to_shape()) == [2, 3]
    a = run_reference(Model([seeded.output(0)], []), [])[0]
    b = run_reference(Model([seeded.output(0)], []), [])[0]
    assert a.dtype == np.float16 and np.array_equal(a, b) and ((a >= 2) & (a <= 3)).all()
    normal = RandomNormal(shape=[100], dtype=Type.f64, mean=5.0, scale=0.1, seed=3.0)
    n1, n2 = (normal.evaluate([])[0] for _ in range(2))
    assert n1.dtype == np.float64 and np.array_equal(n1, n2) and abs(n1.mean() - 5) < 0.1
    like = RandomUniformLike(Parameter(Type.f32, [4]), dtype=Type.f64)
    assert like.get_output_element_type(0) == Type.f64
    p = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    out = Bernoulli(Parameter(Type.f32, [4])).evaluate([p])[0]
    assert out.dtype == np.float32 and out.tolist() == p.tolist()
    picks = Multinomial(Parameter(Type.f32, [2, 3]), sample_size=5, seed=1.0).evaluate(
        [np.log(np.array([[1, 0, 0], [0, 0, 1]], np.float32) + 1e-30)])[0]
    assert picks.dtype == np.int32 and picks.tolist() == [[0] * 5, [2] * 5]
