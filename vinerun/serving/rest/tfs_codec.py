"""TensorFlow Serving REST bodies (``:predict`` row and column formats, ``{"b64": ...}``) and replies.

>>> specs = [TensorSpec("x", "FP32", [1, 2])]
>>> decode_predict(b'{"instances": [[1, 2]]}', specs)[0]["x"]
array([[1., 2.]], dtype=float32)
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import numpy as np

from vinerun.serving.datatypes import numpy_to_tf, tf_name, to_numpy
from vinerun.serving.errors import BadRequest, InvalidInput
from vinerun.serving.tensors import ModelMetadata, TensorSpec, VersionStatus


def _b64(value: Any) -> Any:
    """Replace ``{"b64": text}`` leaves by their bytes."""
    if isinstance(value, dict):
        if set(value) == {"b64"} and isinstance(value["b64"], str):
            try:
                return base64.b64decode(value["b64"], validate=True)
            except (binascii.Error, ValueError) as e:
                raise BadRequest(f"invalid base64 in a {{'b64': ...}} value: {e}") from None
        raise BadRequest(f"unexpected object in tensor data: {sorted(value)}")
    if isinstance(value, list):
        return [_b64(v) for v in value]
    return value


def _array(value: Any, spec: TensorSpec | None, name: str) -> np.ndarray:
    value = _b64(value)
    try:
        if spec is not None and spec.datatype == "BYTES":
            arr = np.array(value, dtype=object)
            return np.vectorize(lambda s: s if isinstance(s, bytes) else str(s).encode(), otypes=[object])(arr) \
                if arr.size else arr
        probe = np.array(value)
        if probe.dtype == object or probe.dtype.kind in "SU":
            if spec is not None and spec.datatype != "BYTES":
                raise InvalidInput(f"Invalid input precision - Expected: {spec.datatype}; Actual: BYTES; "
                                   f"input name: {name}")
            return probe.astype(object)
        return probe.astype(to_numpy(spec.datatype)) if spec is not None else probe
    except (ValueError, TypeError, OverflowError) as e:
        raise InvalidInput(f"input {name!r}: data cannot be read as a tensor: {e}") from None


def decode_predict(body: bytes, specs: list[TensorSpec]) -> tuple[dict[str, np.ndarray], str]:
    """``(inputs, format)`` of a ``:predict`` body; format is ``"row"`` or ``"column"``."""
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"malformed JSON in the request body: {e}") from None
    if not isinstance(doc, dict):
        raise BadRequest("the request body must be a JSON object with 'instances' or 'inputs'")
    if ("instances" in doc) == ("inputs" in doc):
        raise BadRequest("a predict request needs exactly one of 'instances' (row format) or 'inputs' (column format)")
    by_name = {s.name: s for s in specs}
    single = specs[0].name if len(specs) == 1 else None
    if "inputs" in doc:
        body_inputs = doc["inputs"]
        if not isinstance(body_inputs, dict):
            if single is None:
                raise BadRequest("'inputs' must map input names to values for a model with several inputs")
            body_inputs = {single: body_inputs}
        return {k: _array(v, by_name.get(k), k) for k, v in body_inputs.items()}, "column"
    instances = doc["instances"]
    if not isinstance(instances, list) or not instances:
        raise BadRequest("'instances' must be a non-empty list")
    if all(isinstance(i, dict) and not (set(i) == {"b64"}) for i in instances):
        names = set(instances[0])
        if any(set(i) != names for i in instances):
            raise BadRequest("every instance must name the same inputs")
        return {k: _array([i[k] for i in instances], by_name.get(k), k) for k in names}, "row"
    if single is None:
        raise BadRequest("row format without input names needs a model with one input")
    return {single: _array(instances, by_name.get(single), single)}, "row"


def _jsonable(array: np.ndarray) -> Any:
    if array.dtype == object:
        return np.vectorize(lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else b,
                            otypes=[object])(array).tolist()
    return array.tolist()


def encode_predict(outputs: dict[str, np.ndarray], fmt: str) -> dict[str, Any]:
    """TFS's reply: ``{"predictions": ...}`` for rows, ``{"outputs": ...}`` for columns."""
    if fmt == "row":
        if len(outputs) == 1:
            return {"predictions": _jsonable(next(iter(outputs.values())))}
        first = next(iter(outputs.values()))
        return {"predictions": [{k: _jsonable(v[i]) for k, v in outputs.items()} for i in range(len(first))]}
    if len(outputs) == 1:
        return {"outputs": _jsonable(next(iter(outputs.values())))}
    return {"outputs": {k: _jsonable(v) for k, v in outputs.items()}}


def encode_status(statuses: list[VersionStatus]) -> dict[str, Any]:
    return {"model_version_status": [
        {"version": str(s.version), "state": s.state,
         "status": {"error_code": "OK" if not s.error_code else "UNKNOWN",
                    "error_message": "" if not s.error_code else s.error_message}}
        for s in sorted(statuses, key=lambda s: -s.version)]}


def _signature(specs: list[TensorSpec]) -> dict[str, Any]:
    return {s.name: {"dtype": tf_name(numpy_to_tf(to_numpy(s.datatype))), "name": s.name,
                     "tensorShape": {"dim": [{"size": str(d), "name": ""} for d in s.shape], "unknownRank": False}}
            for s in specs}


def encode_metadata(meta: ModelMetadata, version: str) -> dict[str, Any]:
    """TFS's GetModelMetadata reply with the ``serving_default`` signature."""
    return {"modelSpec": {"name": meta.name, "signatureName": "", "version": version},
            "metadata": {"signature_def": {
                "@type": "type.googleapis.com/tensorflow.serving.SignatureDefMap",
                "signatureDef": {"serving_default": {"inputs": _signature(meta.inputs),
                                                     "outputs": _signature(meta.outputs),
                                                     "methodName": "tensorflow/serving/predict"}}}}}
