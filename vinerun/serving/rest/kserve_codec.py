"""KServe v2 REST bodies <-> :class:`InferRequest` / :class:`InferResponse`, with the binary-data extension.

>>> body = b'{"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[1,2]}]}'
>>> decode_request(body, None, "m", None).inputs["x"]
array([[1., 2.]], dtype=float32)
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from vinerun.serving.datatypes import from_numpy, to_numpy
from vinerun.serving.errors import BadRequest, InvalidContentSize, InvalidInput, RequestTooLarge
from vinerun.serving.tensors import InferRequest, InferResponse

#: the most elements one tensor may have (bounds memory for a hostile shape)
MAX_ELEMENTS = 1 << 28


def _field(obj: dict, key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise BadRequest(f"{where} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise BadRequest(f"{where}.{key} must be a {kind.__name__}, got {value!r}")
    return value


def _shape(value: Any, name: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in value):
        raise BadRequest(f"input {name!r}: shape must be a list of non-negative integers, got {value!r}")
    count = int(np.prod(value, dtype=np.int64)) if value else 1
    if count > MAX_ELEMENTS:
        raise RequestTooLarge(f"input {name!r} has {count} elements; the limit is {MAX_ELEMENTS}")
    return tuple(value)


def decode_bytes_elements(raw: bytes, name: str) -> list[bytes]:
    """Split a BYTES binary payload: each element is a 4-byte little-endian length and that many bytes."""
    out, pos = [], 0
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise BadRequest(f"input {name!r}: BYTES payload ends inside a length prefix at byte {pos}")
        (n,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        if pos + n > len(raw):
            raise BadRequest(f"input {name!r}: BYTES element of {n} bytes at byte {pos} runs past the payload")
        out.append(bytes(raw[pos:pos + n]))
        pos += n
    return out


def encode_bytes_elements(array: np.ndarray) -> bytes:
    parts = []
    for item in array.reshape(-1):
        b = item if isinstance(item, bytes) else str(item).encode()
        parts.append(struct.pack("<I", len(b)) + b)
    return b"".join(parts)


def _from_binary(raw: memoryview, datatype: str, shape: tuple[int, ...], name: str) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if datatype == "BYTES":
        items = decode_bytes_elements(bytes(raw), name)
        if len(items) != count:
            raise InvalidContentSize(f"Expected: {count} elements; Actual: {len(items)} elements; input name: {name}")
        arr = np.empty(count, dtype=object)
        arr[:] = items
        return arr.reshape(shape)
    dtype = to_numpy(datatype)
    if len(raw) != count * dtype.itemsize:
        raise InvalidContentSize(f"Expected: {count * dtype.itemsize} bytes; Actual: {len(raw)} bytes; "
                                 f"input name: {name}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _from_json(data: Any, datatype: str, shape: tuple[int, ...], name: str) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    try:
        if datatype == "BYTES":
            flat = np.array(data, dtype=object).reshape(-1)
            arr = np.empty(flat.size, dtype=object)
            arr[:] = [s.encode() if isinstance(s, str) else bytes(s) for s in flat]
        else:
            arr = np.asarray(data, dtype=to_numpy(datatype)).reshape(-1)
    except (ValueError, TypeError, OverflowError) as e:
        raise InvalidInput(f"input {name!r}: data does not fit datatype {datatype}: {e}") from None
    if arr.size != count:
        raise InvalidContentSize(f"Expected: {count} elements; Actual: {arr.size} elements; input name: {name}")
    return arr.reshape(shape)


def decode_request(body: bytes, header_length: str | None, model: str, version: str | None) -> InferRequest:
    """Parse an infer body; ``header_length`` is the ``Inference-Header-Content-Length`` header, if any."""
    if header_length is not None:
        try:
            n = int(header_length)
        except ValueError:
            raise BadRequest(f"Inference-Header-Content-Length must be an integer, got {header_length!r}") from None
        if not 0 <= n <= len(body):
            raise BadRequest(f"Inference-Header-Content-Length is {n} but the body has {len(body)} bytes")
        head, binary = body[:n], memoryview(body)[n:]
    else:
        head, binary = body, memoryview(b"")
    try:
        doc = json.loads(head)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"malformed JSON in the request body: {e}") from None
    if not isinstance(doc, dict):
        raise BadRequest("the request body must be a JSON object with 'inputs'")
    inputs_doc = _field(doc, "inputs", list, "request")
    inputs: dict[str, np.ndarray] = {}
    pos = 0
    for i, item in enumerate(inputs_doc):
        if not isinstance(item, dict):
            raise BadRequest(f"inputs[{i}] must be an object")
        name = _field(item, "name", str, f"inputs[{i}]")
        shape = _shape(item.get("shape"), name)
        datatype = _field(item, "datatype", str, f"input {name!r}")
        params = item.get("parameters") or {}
        if not isinstance(params, dict):
            raise BadRequest(f"input {name!r}: parameters must be an object")
        if name in inputs:
            raise BadRequest(f"input {name!r} is given twice")
        if "binary_data_size" in params:
            size = params["binary_data_size"]
            if not isinstance(size, int) or size < 0:
                raise BadRequest(f"input {name!r}: binary_data_size must be a non-negative integer, got {size!r}")
            if pos + size > len(binary):
                raise BadRequest(f"input {name!r}: binary payload truncated: binary_data_size is {size} bytes but "
                                 f"only {len(binary) - pos} bytes follow the JSON header")
            inputs[name] = _from_binary(binary[pos:pos + size], datatype, shape, name)
            pos += size
        else:
            if "data" not in item:
                raise BadRequest(f"input {name!r} has neither 'data' nor parameters.binary_data_size")
            inputs[name] = _from_json(item["data"], datatype, shape, name)
    if pos != len(binary):
        raise BadRequest(f"{len(binary) - pos} bytes of binary data follow the JSON header that no input claims")
    outputs_doc = doc.get("outputs")
    binary_outputs: dict[str, bool] = {}
    if outputs_doc is not None:
        if not isinstance(outputs_doc, list):
            raise BadRequest("'outputs' must be a list")
        for i, out in enumerate(outputs_doc):
            if not isinstance(out, dict):
                raise BadRequest(f"outputs[{i}] must be an object")
            oname = _field(out, "name", str, f"outputs[{i}]")
            binary_outputs[oname] = bool((out.get("parameters") or {}).get("binary_data", False))
    parameters = doc.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise BadRequest("'parameters' must be an object")
    rid = doc.get("id")
    request = InferRequest(model, version, str(rid) if rid is not None else None, inputs,
                           list(binary_outputs) or None, dict(parameters), "KServe", "REST")
    request.parameters["_binary_outputs"] = binary_outputs
    return request


def _json_data(array: np.ndarray) -> list:
    if array.dtype == object or array.dtype.kind in "SU":
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in array.reshape(-1)]
    if array.dtype.kind == "V" or array.dtype.name == "bfloat16":
        array = array.astype(np.float32)
    return array.reshape(-1).tolist()


def encode_response(response: InferResponse, request: InferRequest) -> tuple[bytes, int | None]:
    """The body and, when binary outputs follow the JSON, the JSON's length for the header."""
    per_output: dict[str, bool] = request.parameters.get("_binary_outputs", {})
    default_binary = bool(request.parameters.get("binary_data_output", False))
    outputs, chunks = [], []
    for name, array in response.outputs.items():
        array = np.asarray(array)
        entry: dict[str, Any] = {"name": name, "datatype": from_numpy(array.dtype), "shape": list(array.shape)}
        if per_output.get(name, default_binary if name not in per_output else False):
            raw = encode_bytes_elements(array) if entry["datatype"] == "BYTES" else \
                np.ascontiguousarray(array).tobytes()
            entry["parameters"] = {"binary_data_size": len(raw)}
            chunks.append(raw)
        else:
            entry["data"] = _json_data(array)
        outputs.append(entry)
    doc: dict[str, Any] = {"model_name": response.model_name, "model_version": response.model_version}
    if response.id is not None:
        doc["id"] = response.id
    doc["outputs"] = outputs
    head = json.dumps(doc, separators=(",", ":")).encode()
    if not chunks:
        return head, None
    return head + b"".join(chunks), len(head)
