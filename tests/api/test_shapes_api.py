"""Dimension, PartialShape, Shape and Symbol behave as OpenVINO's Python API (text forms, comparisons, errors)."""

import copy

import pytest

import vinerun as ov
from vinerun import Dimension, PartialShape, Shape, Symbol


def test_dimension_text_forms():
    assert [str(Dimension(*a)) for a in [(), (7,), (0, 9), (3, -1), (3, 9)]] == ["?", "7", "..9", "3..", "3..9"]
    assert repr(Dimension(4, 6)) == "<Dimension: 4..6>"
    assert Dimension("..9") == Dimension(0, 9) and Dimension("3..") == Dimension(3, -1)


@pytest.mark.parametrize(("text", "message"), [("x", 'Cannot parse dimension: "x"'),
                                               ("?..4", 'Cannot parse min bound: "?"'),
                                               ("4..?", 'Cannot parse max bound: "?"')])
def test_dimension_parse_errors_are_runtime_errors(text, message):
    with pytest.raises(RuntimeError, match=message.replace("?", r"\?").replace(".", r"\.")):
        Dimension(text)


def test_dimension_int_comparison_and_len():
    assert Dimension() == -1 and Dimension(5) == 5 and Dimension(5) != 6 and 5 == Dimension(5)
    assert Dimension(2, 5) != 2 and Dimension(5) != -7
    assert len(Dimension(6)) == 6
    with pytest.raises(ValueError):
        len(Dimension(1, 3))
    assert Dimension(3).min_length == 3 and Dimension(1, 8).max_length == 8 and Dimension().max_length == -1


def test_dimension_relations():
    assert Dimension().relaxes(Dimension(2)) and not Dimension(2).relaxes(Dimension())
    assert Dimension(2).refines(Dimension(0, 5)) and not Dimension(0, 5).refines(Dimension(2))
    assert Dimension(1, 4).compatible(Dimension(3, 9)) and not Dimension(1, 2).compatible(Dimension(3, 9))
    assert Dimension(1, 4).same_scheme(Dimension()) and not Dimension(1).same_scheme(Dimension(2))


def test_symbols_on_dimensions():
    d = Dimension()
    assert not d.has_symbol() and d.get_symbol() is None
    s = Symbol()
    d.set_symbol(s)
    assert d.has_symbol() and d.get_symbol() == s and bool(d.get_symbol())
    other = Dimension(2)
    other.set_symbol(Symbol())
    assert other.get_symbol() != s
    # copies keep the symbol; equality of dimensions ignores symbols
    assert Dimension(d).get_symbol() == s and copy.copy(d).get_symbol() == s and Dimension() == d


def test_symbol_identity_hash_and_merging():
    a, b = Symbol(), Symbol()
    assert a != b and hash(a) == hash(a) and {a: 1, b: 2}[b] == 2
    a.set_equal(b)
    assert a == b and hash(a) == hash(b)
    assert ov.Symbol is Symbol


def test_partial_shape_dimension_errors():
    with pytest.raises(TypeError, match="Two elements are expected in tuple"):
        PartialShape([(1, 2, 3)])
    with pytest.raises(TypeError, match="Incorrect pair of types"):
        PartialShape([("1", "2")])
    with pytest.raises(TypeError, match="Incorrect type <class 'float'> for dimension"):
        PartialShape([1.5])
    with pytest.raises(RuntimeError, match="Cannot get vector of dimensions"):
        PartialShape("[1,,2]")
    assert PartialShape([[2, 5], (1, 3), "..4", 7]) == PartialShape("[2..5,1..3,..4,7]")


def test_partial_shape_sequence_comparisons():
    assert PartialShape([1, 2]) == [1, 2] and PartialShape([1, 2]) == (1, 2) and PartialShape([1, 2]) != [2, 1]
    with pytest.raises(TypeError, match="Cannot compare dynamic shape with <class 'list'>"):
        _ = PartialShape([1, -1]) == [1, -1]
    with pytest.raises(TypeError, match="Cannot compare dynamic shape with <class 'tuple'>"):
        _ = PartialShape.dynamic() == ()
    assert PartialShape([1, -1]) == PartialShape("[1,?]")


def test_partial_shape_bounds_copy_and_slices():
    ps = PartialShape([Dimension(2, 6), -1, 3])
    assert ps.get_min_shape() == [2, 0, 3] and ps.get_max_shape() == (6, (1 << 63) - 1, 3)
    assert ps.all_non_negative is True
    dup = copy.copy(ps)
    dup[0] = 9
    assert ps[0] == Dimension(2, 6), "a copy does not share its dimensions"
    deep = copy.deepcopy(ps)
    assert deep == ps and deep is not ps
    assert isinstance(ps[1:], PartialShape) and ps[::-1] == PartialShape([3, -1, Dimension(2, 6)])


def test_shape_comparisons_and_slices():
    s = Shape([4, 5, 6])
    assert s == (4, 5, 6) and s == [4, 5, 6] and s == PartialShape([4, 5, 6]) and s != (4, 5)
    assert isinstance(s[1:], Shape) and repr(s[::2]) == "<Shape: [4,6]>" and s[-1] == 6
    assert copy.copy(s) == s and copy.copy(s) is not s
