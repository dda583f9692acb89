"""Element types, dimensions, shapes and layouts behave as OpenVINO's."""

import ml_dtypes
import numpy as np
import pytest

from vinerun import Dimension, Layout, PartialShape, Shape, Tensor, Type


def test_type_names_and_dtypes():
    assert Type.f32.get_type_name() == "f32"
    assert repr(Type.f32) == "<Type: 'float32'>"
    assert Type.bf16.to_dtype() == np.dtype(ml_dtypes.bfloat16)
    assert Type(np.int64) == Type.i64
    assert Type("f16") is Type.f16
    assert Type.i4.bitwidth == 4 and Type.f8e4m3.is_real() and not Type.u8.is_signed()
    assert Type.from_onnx(1) is Type.f32


def test_unknown_type_is_a_clear_error():
    with pytest.raises(TypeError, match="Unknown element type 'f31'"):
        Type("f31")


def test_dimension_ranges_and_strings():
    assert str(PartialShape([1, -1, Dimension(2, 5)])) == "[1,?,2..5]"
    assert Dimension(3).is_static and Dimension().is_dynamic
    assert Dimension(2, 5).compatible(4) and not Dimension(2, 5).compatible(6)
    assert Dimension(2, 5).merge(Dimension(4, 8)) == Dimension(4, 5)
    assert PartialShape("[1,3,?,224]") == PartialShape([1, 3, -1, 224])


def test_partial_shape_dynamic_rank_and_to_shape():
    ps = PartialShape.dynamic()
    assert ps.rank.is_dynamic and ps.is_dynamic
    assert PartialShape([2, 3]).to_shape() == Shape([2, 3])
    with pytest.raises(ValueError, match="dynamic"):
        PartialShape([2, -1]).to_shape()


def test_layout():
    lay = Layout("NCHW")
    assert lay.get_index_by_name("C") == 1 and lay.has_name("W") and not lay.has_name("D")
    assert Layout("NC...").get_index_by_name("C") == 1
    with pytest.raises(ValueError, match="defined multiple times"):
        Layout("NCHN")


def test_tensor_copies_unless_shared():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = Tensor(a)
    a[0, 0] = 42
    assert t.data[0, 0] == 0
    shared = Tensor(a, shared_memory=True)
    a[0, 1] = 7
    assert shared.data[0, 1] == 7
    z = Tensor(Type.i32, [2, 2])
    assert z.element_type == Type.i32 and z.shape == Shape([2, 2]) and z.byte_size == 16
