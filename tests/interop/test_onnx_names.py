"""Op names our ONNX reader gives match openvino's for the ops a profile names (openvino as the oracle): a Conv or
Gemm with a bias is ``<node>/WithoutBiases`` plus the Add ``<node>``, so both runtimes' profiles name a layer
alike."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import vinerun

openvino = pytest.importorskip("openvino")


def _model() -> bytes:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in
             [("w1", (4, 3, 3, 3)), ("b1", (4,)), ("w2", (4, 4, 1, 1)), ("wf", (5, 256)), ("bf", (5,))]]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="conv_bias", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w2"], ["b"], name="conv_plain"),
             helper.make_node("Conv", ["b", "w2", "b1"], ["c"], name="", group=1),
             helper.make_node("Flatten", ["c"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def _names(model) -> set[tuple[str, str]]:
    ops = model.get_ordered_ops()
    return {(op.get_friendly_name(), op.get_type_name()) for op in ops
            if op.get_type_name() in ("Convolution", "MatMul", "Add")} - {("fc", "Add"), ("logits", "Add")}


def test_convolution_names_match_openvinos() -> None:
    data = _model()
    ours = _names(vinerun.Core().read_model(data))
    theirs = _names(openvino.Core().read_model(data))
    assert ours == theirs
    assert ("conv_bias/WithoutBiases", "Convolution") in ours and ("conv_bias", "Add") in ours
    assert ("c/WithoutBiases", "Convolution") in ours  # an unnamed node: its output's name
    assert ("fc/WithoutBiases", "MatMul") in ours  # (openvino names a Gemm's Add by its output, a Conv's by the
    # node: the Gemm's Add is left out of the comparison)
