"""Shared helpers of the model builders: seeded weights and small ONNX graph-building aids."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNX_OPSET = 17


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def he(r: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """He-normal f32 weights: keeps activations of a ReLU stack at a steady scale."""
    return (r.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def small(r: np.random.Generator, shape: tuple[int, ...], scale: float = 0.1) -> np.ndarray:
    return (r.standard_normal(shape) * scale).astype(np.float32)


class OnnxGraph:
    """Collects nodes and initializers; ``op("Relu", x)`` returns the new output's name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, value: np.ndarray, hint: str = "c") -> str:
        self._n += 1
        name = f"{hint}_{self._n}"
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attrs: Any) -> Any:
        self._n += 1
        names = [f"{op_type.lower()}_{self._n}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def model(self, name: str, inputs: list[tuple[str, list[Any]]],
              outputs: list[tuple[str, str, list[Any]]]) -> onnx.ModelProto:
        """``outputs``: (graph output name, the value it exposes, its shape); the producing node's output
        is renamed to the graph output's name."""
        renames = {value: out_name for out_name, value, _ in outputs}
        for node in self.nodes:
            node.output[:] = [renames.get(o, o) for o in node.output]
            node.input[:] = [renames.get(i, i) for i in node.input]
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, _, s in outputs],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
                                  producer_name="vinerun.models")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model
