"""Element types as OpenVINO's Python API has them: properties, sizes, names, NumPy conversions."""

import numpy as np
import pytest

import vinerun as ov
from vinerun import Type


@pytest.mark.parametrize(("name", "size", "bits", "real", "integral", "signed", "quantized"), [
    ("f32", 4, 32, True, False, True, False),
    ("bf16", 2, 16, True, False, True, False),
    ("i8", 1, 8, False, True, True, True),
    ("u8", 1, 8, False, True, False, True),
    ("i16", 2, 16, False, True, True, False),
    ("i32", 4, 32, False, True, True, True),
    ("u4", 1, 4, False, True, False, False),
    ("i4", 1, 4, False, True, True, True),
    ("nf4", 1, 4, False, True, False, True),
    ("f4e2m1", 1, 4, True, False, True, True),
    ("f8e8m0", 1, 8, True, False, True, True),
    ("u1", 1, 1, False, True, False, False),
    ("u3", 1, 3, False, True, False, False),
    ("u6", 1, 6, False, True, False, False),
    ("boolean", 1, 8, False, True, True, False),
    ("string", 32, 256, False, True, False, False),
    ("dynamic", 0, 0, False, True, False, False),
])
def test_properties_match_methods(name, size, bits, real, integral, signed, quantized):
    t = getattr(Type, name)
    assert (t.size, t.get_size(), t.bitwidth, t.get_bitwidth()) == (size, size, bits, bits)
    assert t.real is t.is_real() is real
    assert t.integral is t.is_integral() is integral
    assert t.signed is t.is_signed() is signed
    assert t.quantized is t.is_quantized() is quantized
    assert t.type_name == t.get_type_name() == t.to_string() == name


def test_integral_number_excludes_boolean_only():
    assert not Type.boolean.integral_number
    assert Type.i32.integral_number and Type.dynamic.is_integral_number()
    assert not Type.f32.is_integral_number()


def test_repr_uses_openvino_c_type_names():
    assert repr(Type.boolean) == "<Type: 'char'>"
    assert repr(Type.f64) == "<Type: 'double64'>"
    assert repr(Type.u1) == "<Type: 'uint1_t'>"
    assert repr(Type.nf4) == "<Type: 'nfloat4'>"
    assert str(Type.i8) == "<Type: 'int8_t'>"


def test_string_dtype_is_bytes():
    assert Type.string.to_dtype() == np.bytes_
    assert Type.string.to_dtype() == np.dtype("S")


@pytest.mark.parametrize("value", ["|S", "|U", "<U5", "S3", "bytes_", "str_", "bytes", "str",
                                   np.bytes_, np.str_, bytes, str, np.dtype("S4"), np.dtype("<U2")])
def test_string_spellings(value):
    assert Type(value) == Type.string


@pytest.mark.parametrize(("value", "expected"), [
    ("float16", Type.f16), ("float32", Type.f32), ("float64", Type.f64), ("int8", Type.i8), ("uint64", Type.u64),
    ("bool", Type.boolean), ("?", Type.boolean), (np.dtype(">f4"), Type.f32), (bool, Type.boolean),
    ("f32", Type.f32), ("i4", Type.i4),  # element type names come first
])
def test_construct_from_dtype_strings_and_names(value, expected):
    assert Type(value) == expected


def test_unknown_type_string_raises():
    with pytest.raises(TypeError):
        Type("not a type")


def test_openvino_element_types_exist():
    for name in ("f8e4m3", "f8e5m2", "f4e2m1", "f8e8m0", "u1", "u2", "u3", "u4", "u6", "i4", "nf4", "string"):
        assert getattr(ov.Type, name).get_type_name() == name


def test_uint8_stays_u8():
    # u1 / u3 / u6 / nf4 hold their values in uint8, but uint8 arrays are u8
    assert Type(np.uint8) == Type.u8
    assert ov.Tensor(np.zeros(3, np.uint8)).element_type == Type.u8


def test_compatible_and_merge():
    assert Type.f32.compatible(Type.dynamic) and not Type.f32.compatible(Type.f16)
    assert Type.dynamic.merge(Type.f32) == Type.f32
    assert Type.f32.merge(Type.i32) is None
