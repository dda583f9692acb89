"""String tensors: bytes_data / str_data, filling them, and strings through infer()."""

import warnings

import numpy as np
import pytest

import vinerun as ov
import vinerun.opset13 as ops


def test_bytes_and_str_data_are_numpy_string_arrays():
    t = ov.Tensor(["a", "żółw", "ccc"])
    assert t.element_type == ov.Type.string
    b, s = t.bytes_data, t.str_data
    assert b.dtype == np.dtype("S7") and b.tolist() == [b"a", "żółw".encode(), b"ccc"]
    assert s.dtype == np.dtype("<U4") and s.tolist() == ["a", "żółw", "ccc"]
    b[0] = b"x"  # copies: the tensor does not change
    assert t.str_data[0] == "a"


def test_invalid_utf8_kept_as_bytes_replaced_as_str():
    t = ov.Tensor(np.array([b"ok", b"\xe2\x80"]))
    assert t.bytes_data.tolist() == [b"ok", b"\xe2\x80"]
    assert t.str_data.tolist() == ["ok", "\ufffd"]


def test_trailing_nuls_dropped_as_numpy_does():
    t = ov.Tensor(["ab\0\0", "c\0d"])
    assert t.str_data.dtype == np.dtype("<U3")
    assert t.str_data.tolist() == ["ab", "c\0d"]


def test_data_warns_and_copies():
    t = ov.Tensor(np.array(["x", "yz"]))
    with pytest.warns(RuntimeWarning, match="Data of string type will be copied"):
        d = t.data
    assert d.dtype.kind == "S" and d.tolist() == [b"x", b"yz"]


def test_shared_memory_not_applicable():
    with pytest.raises(RuntimeError, match="String types can be only copied"):
        ov.Tensor(np.array(["a"]), shared_memory=True)


@pytest.mark.parametrize("init_type", [ov.Type.string, str, bytes, np.str_, np.bytes_, "|S"])
def test_allocated_string_tensor_is_empty_strings(init_type):
    t = ov.Tensor(init_type, [2, 2])
    assert t.element_type == ov.Type.string
    assert t.str_data.tolist() == [["", ""], ["", ""]]
    assert t.bytes_data.dtype == np.dtype("S1")
    assert t.byte_size == 4 * 32 and t.get_strides() == [64, 32]


@pytest.mark.parametrize("attr", ["bytes_data", "str_data"])
def test_setters_fill_in_place_keeping_shape(attr):
    t = ov.Tensor(ov.Type.string, [2, 2])
    setattr(t, attr, np.array(["a", "b", "c", "dé"]))
    assert list(t.shape) == [2, 2]
    assert t.str_data.tolist() == [["a", "b"], ["c", "dé"]]
    setattr(t, attr, [[b"1", b"2"], [b"3", b"4"]])
    assert t.bytes_data.tolist() == [[b"1", b"2"], [b"3", b"4"]]


def test_setter_checks_kind_then_size():
    t = ov.Tensor(ov.Type.string, [1])
    with pytest.raises(RuntimeError, match="Unknown string kind"):
        t.bytes_data = [1, 2, 3]
    with pytest.raises(RuntimeError, match="same size"):
        t.str_data = ["a", "b"]


def test_non_string_tensor_rejects_string_accessors():
    t = ov.Tensor(np.zeros(2, np.float32))
    with pytest.raises(RuntimeError, match="must be a string"):
        _ = t.bytes_data
    with pytest.raises(RuntimeError, match="must be a string"):
        t.str_data = ["a", "b"]


def test_copy_from_reshapes_and_copy_to():
    t = ov.Tensor(ov.Type.string, [])
    t.copy_from(np.array([["a"], ["bc"]]))
    assert list(t.shape) == [2, 1]
    other = ov.Tensor(ov.Type.string, [5])
    t.copy_to(other)
    assert other.str_data.tolist() == [["a"], ["bc"]]


def test_roi_of_string_tensor_writes_through():
    t = ov.Tensor(["a", "b", "c", "d"])
    roi = ov.Tensor(t, [1], [3])
    roi.str_data = ["X", "Y"]
    assert t.str_data.tolist() == ["a", "X", "Y", "d"]


def _identity(shape):
    p = ops.parameter(shape, ov.Type.string)
    return ov.compile_model(ov.Model([ops.result(p)], [p]))


@pytest.mark.parametrize("data", [["a", "żółw"], [b"x", b"yy"], np.array(["q", "r"]), np.array([b"q", b"r"])])
def test_infer_list_of_strings_is_one_input_and_decode_flag(data):
    compiled = _identity([-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "string data will be copied" warning on the way
        decoded = compiled(data)[0]
        raw = compiled(data, decode_strings=False)[0]
    expected = np.array(data)
    assert decoded.dtype.kind == "U" and raw.dtype.kind == "S"
    assert np.array_equal(decoded, expected if expected.dtype.kind == "U" else np.char.decode(expected))
    assert np.array_equal(raw, expected if expected.dtype.kind == "S" else np.char.encode(expected))


def test_infer_request_string_tensor_input():
    request = _identity([2]).create_infer_request()
    result = request.infer({0: ov.Tensor(["é", "b"])}, decode_strings=True)
    assert result[0].tolist() == ["é", "b"]
    assert request.get_output_tensor(0).str_data.tolist() == ["é", "b"]


def test_decode_strings_is_keyword_only():
    compiled = _identity([-1])
    with pytest.raises(TypeError):
        compiled(["a"], False, False, False)
    assert ov.CompiledModel.__call__.__kwdefaults__["decode_strings"] is True
    assert ov.InferRequest.infer.__kwdefaults__["decode_strings"] is True


def test_string_constant_from_tensor():
    const = ops.constant(ov.Tensor(["ab", "ç"]))
    assert const.get_element_type() == ov.Type.string
    assert list(const.get_value()) == ["ab", "ç"]
