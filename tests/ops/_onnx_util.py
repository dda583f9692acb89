"""Build small ONNX models and run them through vinerun's public API on CPU (shared by the op tests).

They check op semantics at the model's precision: compiled with ``INFERENCE_PRECISION_HINT`` f32 (no bf16
lowering on CPUs that have it natively).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

import vinerun as ov
from tests.ops._precision import F32


def one_node_model(node: onnx.NodeProto, opset: int, feeds: dict[str, np.ndarray]) -> bytes:
    """A model whose inputs are ``feeds`` (names, dtypes, shapes) and whose outputs are ``node``'s."""
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    outputs = [helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None) for name in node.output]
    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def run_model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
              feeds: list[np.ndarray], opset: int = 18) -> tuple[ov.CompiledModel, tuple]:
    """Compile a graph of ``nodes`` for CPU; the compiled model and its outputs on ``feeds``."""
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    core = ov.Core()
    compiled = core.compile_model(core.read_model(model.SerializeToString()), "CPU", F32)
    return compiled, compiled.create_infer_request().infer(feeds).to_tuple()


def run_onnx(node: onnx.NodeProto, opset: int, feeds: dict[str, np.ndarray]) -> tuple:
    """The outputs of ``node`` computed on ``feeds`` by vinerun on CPU."""
    core = ov.Core()
    model = core.read_model(one_node_model(node, opset, feeds))
    return core.compile_model(model, "CPU", F32).create_infer_request().infer(list(feeds.values())).to_tuple()
