"""Small reference networks with deterministic (seeded) weights, for tests, benchmarks and demos.

Each comes as a vinerun ``Model`` built with the opset API and as the same network in ONNX:

>>> from vinerun import models
>>> model = models.build("cnn")                 # vinerun Model
>>> proto = models.build_onnx("cnn")            # onnx.ModelProto, same weights
>>> inputs = models.sample_inputs("cnn")        # {"image": array}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vinerun.ir.model import Model
from vinerun.models.cnn import cnn_inputs, cnn_model, cnn_onnx
from vinerun.models.lstm import lstm_inputs, lstm_model, lstm_onnx
from vinerun.models.transformer import TransformerConfig, transformer_inputs, transformer_model, transformer_onnx

#: name -> (vinerun builder, ONNX builder, sample inputs)
MODELS: dict[str, tuple[Callable[..., Model], Callable[..., Any], Callable[..., dict[str, np.ndarray]]]] = {
    "cnn": (cnn_model, cnn_onnx, cnn_inputs),
    "transformer": (transformer_model, transformer_onnx, transformer_inputs),
    "lstm": (lstm_model, lstm_onnx, lstm_inputs),
}


def _entry(name: str) -> tuple:
    if name not in MODELS:
        raise KeyError(f"no model named '{name}'; known: {sorted(MODELS)}")
    return MODELS[name]


def build(name: str, **kwargs: Any) -> Model:
    """The named network as a vinerun Model."""
    return _entry(name)[0](**kwargs)


def build_onnx(name: str, **kwargs: Any) -> Any:
    """The named network as an ``onnx.ModelProto`` (same weights as :func:`build`)."""
    return _entry(name)[1](**kwargs)


def sample_inputs(name: str, **kwargs: Any) -> dict[str, np.ndarray]:
    """Deterministic inputs for the named network's default sizes."""
    return _entry(name)[2](**kwargs)


__all__ = ["MODELS", "TransformerConfig", "build", "build_onnx", "sample_inputs"]
