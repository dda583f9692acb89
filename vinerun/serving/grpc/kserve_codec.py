"""KServe v2 gRPC messages <-> the data plane's ``InferRequest`` / ``InferResponse``.

Inputs come either all in ``raw_input_contents`` (little-endian bytes; BYTES length-prefixed) or
each in its typed ``contents`` field; outputs always go back in ``raw_output_contents``, as OVMS
and Triton answer.

>>> msg = pb.ModelInferRequest(model_name="m")
>>> t = msg.inputs.add(name="x", datatype="FP32", shape=[1, 2]); t.contents.fp32_contents.extend([1, 2])
>>> decode_infer_request(msg).inputs["x"]
array([[1., 2.]], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vinerun.serving.datatypes import KSERVE_TO_NUMPY, from_numpy
from vinerun.serving.errors import BadRequest, InvalidContentSize, InvalidInput, InvalidPrecision, InvalidShape
from vinerun.serving.grpc.bytes_codec import decode_bytes, encode_bytes
from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb
from vinerun.serving.tensors import InferRequest, InferResponse

#: KServe datatype -> the InferTensorContents field that carries it (FP16/BF16: raw only, as in OVMS)
CONTENTS_FIELD: dict[str, str] = {
    "BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
    "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents", "UINT32": "uint_contents",
    "UINT64": "uint64_contents", "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
}


def parameters_to_dict(params: Any) -> dict[str, Any]:
    """A ``map<string, InferParameter>`` as plain Python values."""
    out = {}
    for key, param in params.items():
        which = param.WhichOneof("parameter_choice")
        out[key] = getattr(param, which) if which else None
    return out


def _shape(tensor: Any) -> tuple[list[int], int]:
    shape = list(tensor.shape)
    if any(d < 0 for d in shape):
        raise InvalidShape(f"negative dimension in shape {shape}; input name: {tensor.name}")
    return shape, math.prod(shape)


def _dtype(tensor: Any) -> np.dtype:
    try:
        return KSERVE_TO_NUMPY[tensor.datatype]
    except KeyError:
        raise InvalidPrecision(f"unknown datatype {tensor.datatype!r}; input name: {tensor.name}") from None


def decode_raw(tensor: Any, raw: bytes) -> np.ndarray:
    """One input from its ``raw_input_contents`` entry, checked against its shape and datatype."""
    shape, count = _shape(tensor)
    dtype = _dtype(tensor)
    if tensor.datatype == "BYTES":
        return decode_bytes(raw, count, tensor.name).reshape(shape)
    expected = count * dtype.itemsize
    if len(raw) != expected:
        raise InvalidContentSize(f"Expected: {expected} bytes; Actual: {len(raw)} bytes; input name: {tensor.name}")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False).reshape(shape)


def decode_contents(tensor: Any) -> np.ndarray:
    """One input from its typed ``contents`` field, checked against its shape and datatype."""
    shape, count = _shape(tensor)
    dtype = _dtype(tensor)
    field = CONTENTS_FIELD.get(tensor.datatype)
    if field is None:
        raise InvalidInput(f"{tensor.datatype} tensors must be sent in raw_input_contents; input name: {tensor.name}")
    values = getattr(tensor.contents, field)
    if len(values) != count:
        raise InvalidContentSize(f"Expected: {count} values in {field}; Actual: {len(values)}; "
                                 f"input name: {tensor.name}")
    if tensor.datatype == "BYTES":
        out = np.empty(count, dtype=object)
        out[:] = list(values)
        return out.reshape(shape)
    wide = np.array(values, dtype=np.int64 if dtype.kind in "iu" and dtype != np.uint64 else dtype)
    array = wide.astype(dtype)
    if dtype.kind in "iu" and not np.array_equal(array, wide):
        raise InvalidInput(f"a value in {field} does not fit {tensor.datatype}; input name: {tensor.name}")
    return array.reshape(shape)


def decode_infer_request(msg: pb.ModelInferRequest, api: str = "KServe") -> InferRequest:
    """A ``ModelInferRequest`` as the data plane's ``InferRequest``; bad tensors raise ``InvalidInput``."""
    raw = msg.raw_input_contents
    if raw and len(raw) != len(msg.inputs):
        raise BadRequest(f"raw_input_contents has {len(raw)} entries for {len(msg.inputs)} inputs; "
                         "use raw_input_contents for all inputs or for none")
    inputs: dict[str, np.ndarray] = {}
    for i, tensor in enumerate(msg.inputs):
        if tensor.name in inputs:
            raise BadRequest(f"input {tensor.name!r} appears twice")
        if raw and tensor.HasField("contents"):
            raise BadRequest(f"input {tensor.name!r} has both contents and raw_input_contents")
        inputs[tensor.name] = decode_raw(tensor, raw[i]) if raw else decode_contents(tensor)
    outputs = [o.name for o in msg.outputs] or None
    return InferRequest(
        model_name=msg.model_name, model_version=msg.model_version or None, id=msg.id or None, inputs=inputs,
        outputs=outputs, parameters=parameters_to_dict(msg.parameters), api=api, interface="gRPC",
    )


def encode_tensor(array: np.ndarray) -> tuple[str, bytes]:
    """An output's KServe datatype and little-endian raw bytes."""
    datatype = from_numpy(array.dtype)
    if datatype == "BYTES":
        return datatype, encode_bytes(array)
    return datatype, np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def encode_infer_response(resp: InferResponse) -> pb.ModelInferResponse:
    """The data plane's ``InferResponse`` as a ``ModelInferResponse`` with ``raw_output_contents``."""
    msg = pb.ModelInferResponse(model_name=resp.model_name, model_version=str(resp.model_version), id=resp.id or "")
    for name, array in resp.outputs.items():
        array = np.asarray(array)
        datatype, raw = encode_tensor(array)
        msg.outputs.add(name=name, datatype=datatype, shape=list(array.shape))
        msg.raw_output_contents.append(raw)
    return msg
