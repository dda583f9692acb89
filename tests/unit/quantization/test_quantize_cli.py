"""``vinerun quantize``: the round trip from ONNX + .npz to IR, and errors that name what was wrong."""

import re

import numpy as np
import pytest

import vinerun as ov
from vinerun.tools import cli

onnx = pytest.importorskip("onnx")


def _onnx_model(path) -> str:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.full(4, 0.1, np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    file = path / "m.onnx"
    onnx.save(model, str(file))
    return str(file)


def test_round_trip(tmp_path, capsys):
    model = _onnx_model(tmp_path)
    np.savez(tmp_path / "s.npz", x=np.random.default_rng(1).random((5, 1, 3, 8, 8)).astype(np.float32))
    out = tmp_path / "q" / "m_int8.xml"
    assert cli.main(["quantize", "-m", model, "--data", str(tmp_path / "s.npz"), "-o", str(out),
                     "--preset", "mixed", "--subset-size", "3"]) == 0
    assert "FakeQuantize" in capsys.readouterr().out
    q = ov.Core().read_model(out)
    assert sum(n.type_name == "FakeQuantize" for n in q.get_ordered_ops()) == 2
    x = np.random.default_rng(2).random((1, 3, 8, 8)).astype(np.float32)
    ref = ov.Core().compile_model(model, "CPU")(x)[0]
    np.testing.assert_allclose(ov.Core().compile_model(q, "CPU")(x)[0], ref, atol=0.05 * np.abs(ref).max())


def test_compress_weights_only(tmp_path):
    model = _onnx_model(tmp_path)
    assert cli.main(["quantize", "-m", model, "-o", str(tmp_path / "c.xml"), "--compress-weights", "int8_sym"]) == 0


@pytest.mark.parametrize("arrays, message", [
    ({"y": np.zeros((2, 1, 3, 8, 8), np.float32), "z": np.zeros(1)}, "no array for model input"),
    ({"x": np.zeros((2, 3, 8, 8), np.float32)}, "expected \\[N,"),
    ({"x": np.zeros((2, 1, 3, 9, 8), np.float32)}, "dimension 2"),
])
def test_bad_data_is_named(tmp_path, capsys, arrays, message):
    model = _onnx_model(tmp_path)
    np.savez(tmp_path / "s.npz", **arrays)
    assert cli.main(["quantize", "-m", model, "--data", str(tmp_path / "s.npz"), "-o", str(tmp_path / "q.xml")]) == 1
    err = capsys.readouterr().err
    assert "vinerun quantize: error: --data" in err
    assert re.search(message, err)


def test_missing_model_and_data(tmp_path, capsys):
    assert cli.main(["quantize", "-m", str(tmp_path / "none.onnx"), "--data", "x", "-o", "q.xml"]) == 1
    assert "does not exist" in capsys.readouterr().err
    model = _onnx_model(tmp_path)
    assert cli.main(["quantize", "-m", model, "-o", str(tmp_path / "q.xml")]) == 1
    assert "--data is required" in capsys.readouterr().err
