"""ov.Tensor as OpenVINO's Python API has it: constructors, shared memory, shapes, packed types, ROI, copies."""

import copy
import sys
import warnings

import numpy as np
import pytest

import vinerun as ov
import vinerun.opset13 as ops
from vinerun.ir.tensor import tensor_values


@pytest.mark.parametrize("type_arg", [ov.Type.f32, np.float32, np.dtype(np.float32), "float32"])
@pytest.mark.parametrize("shape", [[2, 3], (2, 3), ov.Shape([2, 3]), np.array([2, 3])])
def test_keyword_and_positional_type_shape(type_arg, shape):
    for t in (ov.Tensor(type=type_arg, shape=shape), ov.Tensor(type_arg, shape), ov.Tensor(shape=shape, type=type_arg)):
        assert t.element_type == ov.Type.f32 and list(t.shape) == [2, 3] and t.data.dtype == np.float32


def test_shared_memory_views_the_array():
    arr = np.ones((2, 3), np.float32)
    refs = sys.getrefcount(arr)
    t = ov.Tensor(array=arr, shared_memory=True)
    assert sys.getrefcount(arr) == refs + 1  # one reference, no extra views kept
    arr[0, 0] = 5
    assert t.data[0, 0] == 5 and np.shares_memory(arr, t.data)
    copied = ov.Tensor(arr)
    assert not np.shares_memory(arr, copied.data) and copied.data.flags.c_contiguous


def test_shared_memory_needs_c_contiguous():
    with pytest.raises(RuntimeError, match="SHARED MEMORY MODE FOR THIS TENSOR IS NOT APPLICABLE"):
        ov.Tensor(np.ones((4, 4), np.float32)[:, ::2], shared_memory=True)
    assert ov.Tensor(np.ones((4, 4), np.float32)[:, ::2]).data.shape == (4, 2)  # a copy is fine


def test_set_shape_within_and_beyond_shared_capacity():
    arr = np.arange(6, dtype=np.float32)
    t = ov.Tensor(arr, shared_memory=True)
    t.shape = [2, 2]
    assert np.shares_memory(t.data, arr) and t.data.tolist() == [[0, 1], [2, 3]]
    t.shape = [6]  # back to the full capacity
    assert t.data.tolist() == arr.tolist()
    with pytest.raises(RuntimeError, match="failed"):
        t.shape = [7]


def test_owned_tensor_grows_and_shrinks():
    t = ov.Tensor(ov.Type.i32, [2, 2])
    t.shape = [3, 3]
    assert t.data.shape == (3, 3)
    t.set_shape([1, 4])
    assert t.data.shape == (1, 4) and t.size == 4 and t.byte_size == 16


def test_viewed_buffer_constructor():
    buf = np.arange(8, dtype=np.float32)
    t = ov.Tensor(buf, [4, 4], ov.Type.f16)
    assert t.data.dtype == np.float16 and t.data.shape == (4, 4) and np.shares_memory(t.data, buf)
    assert np.array_equal(ov.Tensor(buf, [2, 4]).data, buf.reshape(2, 4))
    with pytest.raises(RuntimeError, match="needs"):
        ov.Tensor(buf, [9])


@pytest.mark.parametrize(("name", "nbytes"), [("u1", 2), ("u2", 3), ("u3", 6), ("u4", 5), ("u6", 9), ("i4", 5),
                                              ("nf4", 5), ("f4e2m1", 5)])
def test_packed_types_hold_bytes(name, nbytes):
    et = getattr(ov.Type, name)
    t = ov.Tensor(et, [10])
    assert t.data.shape == (nbytes,) and t.byte_size == nbytes and t.size == 10
    assert t.data.dtype == (np.int8 if name == "i4" else np.uint8)
    with pytest.raises(RuntimeError, match="bitwidths less then 8 bit"):
        t.get_strides()
    with pytest.raises(RuntimeError, match="bitwidths less then 8 bit"):
        ov.Tensor(t, [0], [2])


@pytest.mark.parametrize(("name", "values", "packed"), [
    ("u1", [1, 0, 0, 0, 0, 0, 0, 1, 1], [0b10000001, 0b10000000]),
    ("u2", [1, 2, 3, 0, 1], [0b00111001, 0b01]),
    ("u4", [1, 2, 3], [0x21, 0x03]),
    ("u3", [1, 2, 3, 4, 5, 6, 7, 0, 7], [108, 108, 30, 192, 0, 128]),
    ("u6", [1, 2, 33, 63, 5], [18, 31, 11, 80, 0, 0]),
])
def test_packed_layout_is_openvinos(name, values, packed):
    # the layouts openvino's runtime uses (checked against its Constant bytes)
    et = getattr(ov.Type, name)
    t = ov.Tensor(et, [len(values)])
    t.data[:] = packed
    assert tensor_values(t).astype(int).tolist() == values
    assert ov.Tensor.wrap(np.array(values, np.uint8), et).data.tolist() == packed


def test_i4_values_sign_extend():
    t = ov.Tensor(ov.Type.i4, [3])
    t.data[:] = np.array([0xF8 - 256, 0x07], np.int8)  # -8 | 15<<4 ; 7
    assert tensor_values(t).astype(int).tolist() == [-8, -1, 7]


def test_packed_buffer_constructor_shares():
    buf = np.zeros(4, np.uint8)
    t = ov.Tensor(buf, [8], ov.Type.u4)
    assert np.shares_memory(t.data, buf) and t.data.nbytes == t.byte_size == 4


def test_roi_shares_memory_and_keeps_strides():
    parent = ov.Tensor(np.arange(24.0).reshape(2, 3, 4))
    roi = ov.Tensor(parent, [0, 1, 1], [2, 3, 3])
    assert list(roi.shape) == [2, 2, 2] and roi.strides == [96, 32, 8] and not roi.is_continuous()
    roi.data[0, 0, 0] = -1
    assert parent.data[0, 1, 1] == -1
    with pytest.raises(RuntimeError):
        ov.Tensor(parent, [0, 0], [1, 1])
    with pytest.raises(RuntimeError):
        ov.Tensor(parent, [0, 0, 0], [3, 3, 4])
    dst = ov.Tensor(ov.Type.f64, [1])
    roi.copy_to(dst)
    assert dst.data.ravel().tolist() == [-1, 6, 9, 10, 17, 18, 21, 22]


def test_tensor_from_port():
    param = ops.parameter([2, 3], np.float32)
    t = ov.Tensor(param.output(0))
    assert list(t.shape) == [2, 3] and t.element_type == ov.Type.f32
    assert list(ov.Tensor(ops.parameter([-1, 3], np.float32).output(0)).shape) == [0]
    arr = np.arange(8, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="cropped"):
        shared = ov.Tensor(param.output(0), arr)
    assert np.shares_memory(shared.data, arr) and shared.data.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(RuntimeError, match="exceeds"):
        ov.Tensor(param.output(0), np.ones(5, np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        viewed = ov.Tensor(ops.parameter([2], np.int16).output(0), np.ones(4, np.int8))
    assert any("casted" in str(w.message) for w in caught)  # (and "cropped": 2 elements of 4)
    assert viewed.data.tolist() == [257, 257]  # the bytes, seen as the port's type


def test_copy_to_copy_from_check_types_and_reshape():
    src = ov.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    dst = ov.Tensor(ov.Type.f32, [1])
    src.copy_to(dst)
    assert list(dst.shape) == [2, 3] and np.array_equal(dst.data, src.data)
    with pytest.raises(RuntimeError, match="element types are not equal"):
        src.copy_to(ov.Tensor(ov.Type.i32, [2, 3]))
    with pytest.raises(RuntimeError, match="element types are not equal"):
        dst.copy_from([1.0, 2.0])  # a list of floats is f64
    dst.copy_from(np.zeros(4, np.float32))
    assert list(dst.shape) == [4]


def test_copy_shares_deepcopy_does_not():
    t = ov.Tensor(np.zeros((2, 2), np.int64))
    shallow, deep = copy.copy(t), copy.deepcopy(t)
    t.data[0, 0] = 3
    assert shallow.data[0, 0] == 3 and deep.data[0, 0] == 0


def test_inputs_other_than_arrays_lists_images_are_rejected():
    with pytest.raises(TypeError):
        ov.Tensor(3.0)
    assert ov.Tensor([[1, 2]]).element_type == ov.Type.i64
    assert ov.Tensor([1.0]).element_type == ov.Type.f64


def test_empty_and_scalar_arrays():
    for shared in (True, False):
        empty = ov.Tensor(np.array([], np.int32), shared_memory=shared)
        assert empty.is_continuous() and empty.byte_size == 0 and list(empty.shape) == [0]
        scalar = np.array(2.0)
        t = ov.Tensor(scalar, shared_memory=shared)
        assert list(t.shape) == [] and np.shares_memory(scalar, t.data) is shared


def test_packed_tensor_as_infer_input():
    param = ops.parameter([3], ov.Type.u4)
    out = ops.convert(param, ov.Type.i32)
    compiled = ov.compile_model(ov.Model([ops.result(out)], [param]))
    t = ov.Tensor(ov.Type.u4, [3])
    t.data[:] = [0x21, 0x0F]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compiled({0: t})[0].tolist() == [1, 2, 15]


def test_bf16_and_f8_data_show_raw_bits():
    t = ov.Tensor(ov.Type.bf16, [2])
    assert t.data.dtype == np.float16
    t.data[:] = np.array([1.0, 2.0], np.float16)  # float16 bits, as openvino
    assert t.data.view(np.uint16).tolist() == [0x3C00, 0x4000]
    assert tensor_values(t).view(np.uint16).tolist() == [0x3C00, 0x4000]
    assert ov.Tensor(ov.Type.f8e4m3, [3]).data.dtype == np.uint8


def test_float16_array_for_bf16_input_carries_bits():
    p = ops.parameter([2], ov.Type.bf16)
    request = ov.compile_model(ov.Model([ops.result(p)], [p])).create_infer_request()
    bits = np.array([1.5, -2.0], np.float16)
    for share in (False, True):
        request.infer([bits], share_inputs=share)
        assert request.get_output_tensor(0).data.view(np.uint16).tolist() == bits.view(np.uint16).tolist()


def test_data_is_a_view_of_the_tensor_memory():
    arr = np.zeros(3, np.float32)
    for t in (ov.Tensor(arr, shared_memory=True), ov.Tensor(arr), ov.Tensor(ov.Type.f32, [3])):
        view = t.data
        assert view.flags.owndata is False
        view[0] = 7
        assert t.data[0] == 7
