"""Build a one-node ONNX model and run it through vinerun's public API (for tests/ops)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

import vinerun as ov


def one_node_model(node: onnx.NodeProto, opset: int, feeds: dict[str, np.ndarray], n_outputs: int = 1) -> bytes:
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    outputs = [helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None) for name in node.output]
    graph = helper.make_graph([node], "g", inputs, outputs[:n_outputs] if n_outputs else outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def run_onnx(node: onnx.NodeProto, opset: int, feeds: dict[str, np.ndarray]) -> tuple:
    """Outputs of ``node`` (all of its named outputs) on ``feeds``."""
    core = ov.Core()
    model = core.read_model(one_node_model(node, opset, feeds, n_outputs=0))
    return core.compile_model(model, "CPU").create_infer_request().infer(list(feeds.values())).to_tuple()
