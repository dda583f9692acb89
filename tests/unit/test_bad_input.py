"""Bad files, unknown ops and bad infer inputs give clear errors naming what is wrong."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import vinerun as ov
from vinerun.errors import InputError, ModelReadError, UnsupportedOpError


def _onnx_model(nodes=None, opset=17) -> bytes:
    nodes = nodes or [helper.make_node("Relu", ["x"], ["y"], name="relu1")]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


@pytest.fixture
def compiled():
    core = ov.Core()
    return core.compile_model(core.read_model(_onnx_model()), "CPU")


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(ModelReadError, match="nope.onnx"):
        ov.Core().read_model(tmp_path / "nope.onnx")


def test_corrupt_file_names_the_file(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ModelReadError, match="garbage.onnx"):
        ov.Core().read_model(path)


def test_truncated_file_names_the_file(tmp_path):
    data = _onnx_model()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelReadError, match=r"cut\.onnx.*(truncated|corrupt)"):
        ov.Core().read_model(path)


def test_unknown_op_names_node_and_op():
    data = _onnx_model([helper.make_node("FancyOp", ["x"], ["y"], name="mystery", domain="my.domain")])
    with pytest.raises(UnsupportedOpError, match=r"'mystery'.*FancyOp"):
        ov.Core().read_model(data)


def test_dangling_input_names_node_and_tensor():
    data = _onnx_model([helper.make_node("Relu", ["nowhere"], ["y"], name="lost")])
    with pytest.raises(ModelReadError, match=r"'lost' reads 'nowhere'"):
        ov.Core().read_model(data)


def test_wrong_shape_names_the_input(compiled):
    with pytest.raises(InputError, match=r"Wrong shape for input 'x'.*\[2, 4\].*\[2,3\]"):
        compiled.create_infer_request().infer({"x": np.zeros((2, 4), np.float32)})


def test_wrong_dtype_names_the_input(compiled):
    with pytest.raises(InputError, match=r"Wrong element type for input 'x'.*f32"):
        compiled.create_infer_request().infer({"x": np.full((2, 3), "a")})
    with pytest.raises(InputError, match=r"tensor is i32.*expects f32"):
        compiled.create_infer_request().infer({"x": ov.Tensor(np.zeros((2, 3), np.int32))})


def test_missing_input_uses_the_request_tensor(compiled):
    # as OpenVINO: a request holds its input tensors from creation; an input left out keeps its tensor
    request = compiled.create_infer_request()
    np.testing.assert_array_equal(request.infer({})[0], np.zeros((2, 3), np.float32))
    request.get_input_tensor().data[:] = 2.0
    np.testing.assert_array_equal(request.infer()[0], np.full((2, 3), 2.0, np.float32))


def test_unknown_input_name(compiled):
    with pytest.raises(InputError, match=r"no input named 'z'.*\['x'\]"):
        compiled.create_infer_request().infer({"z": np.zeros((2, 3), np.float32)})


def test_unknown_device_is_named():
    with pytest.raises(RuntimeError, match="NPU7"):
        ov.Core().compile_model(ov.Core().read_model(_onnx_model()), "NPU7")


def test_lossless_conversions_are_accepted(compiled):
    out = compiled.create_infer_request().infer({"x": np.array([[1, -2, 3], [4, 5, -6]], np.int64)})
    np.testing.assert_array_equal(out[0], [[1, 0, 3], [4, 5, 0]])
