"""Transport-free request/response records and input validation against a served model's tensors.

>>> spec = TensorSpec("x", "FP32", [1, 3])
>>> validate_inputs({"x": np.zeros((1, 3), np.float32)}, [spec])["x"].shape
(1, 3)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vinerun.serving.datatypes import from_numpy
from vinerun.serving.errors import (
    InvalidInputCount,
    InvalidPrecision,
    InvalidShape,
    MissingInput,
    UnexpectedInput,
)


@dataclass
class TensorSpec:
    """A model input or output as clients see it: name, KServe datatype, shape (-1 = dynamic).

    >>> TensorSpec("image", "FP32", [-1, 3, 224, 224]).shape[0]
    -1
    """

    name: str
    datatype: str
    shape: list[int]


@dataclass
class InferRequest:
    """One inference call, whichever API and transport it came over.

    >>> InferRequest("m", None, None, {"x": np.zeros((1, 3), np.float32)})
    InferRequest(model_name='m', model_version=None, id=None, inputs={'x': ...}, ...)
    """

    model_name: str
    model_version: str | None
    id: str | None
    inputs: dict[str, np.ndarray]
    outputs: list[str] | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    api: str = "KServe"
    interface: str = "REST"


@dataclass
class InferResponse:
    """Outputs in the model's output order, with the version that computed them.

    >>> InferResponse("m", "2", None, {"y": np.zeros(2)}).model_version
    '2'
    """

    model_name: str
    model_version: str
    id: str | None
    outputs: dict[str, np.ndarray]


@dataclass
class ModelMetadata:
    """What ``GET /v2/models/{m}`` and ModelMetadata return.

    >>> ModelMetadata("m", ["1"], "OpenVINO", [], []).platform
    'OpenVINO'
    """

    name: str
    versions: list[str]
    platform: str
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]


@dataclass
class VersionStatus:
    """One version's state, as TensorFlow Serving's GetModelStatus and ``GET /v1/config`` report it.

    >>> VersionStatus(1, "AVAILABLE")
    VersionStatus(version=1, state='AVAILABLE', error_code=0, error_message='OK')
    """

    version: int
    state: str
    error_code: int = 0
    error_message: str = "OK"


def _fmt(shape: Any) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")"


def validate_inputs(inputs: dict[str, np.ndarray], specs: list[TensorSpec]) -> dict[str, np.ndarray]:
    """Check names, count, datatype and shape against ``specs``; raises an ``InvalidInput`` naming the input."""
    expected = {s.name for s in specs}
    for name in inputs:
        if name not in expected:
            raise UnexpectedInput(f"{name!r}; the model's inputs are {sorted(expected)}")
    for spec in specs:
        if spec.name not in inputs:
            if len(inputs) != len(specs):
                raise InvalidInputCount(f"Expected: {len(specs)}; Actual: {len(inputs)}; missing input name: "
                                        f"{spec.name}")
            raise MissingInput(spec.name)
    for spec in specs:
        array = inputs[spec.name]
        actual = from_numpy(array.dtype)
        if actual != spec.datatype:
            raise InvalidPrecision(f"Expected: {spec.datatype}; Actual: {actual}; input name: {spec.name}")
        if len(array.shape) != len(spec.shape) or any(e not in (-1, a) for e, a in zip(spec.shape, array.shape,
                                                                                      strict=True)):
            raise InvalidShape(f"Expected: {_fmt(spec.shape)}; Actual: {_fmt(array.shape)}; input name: {spec.name}")
    return inputs
