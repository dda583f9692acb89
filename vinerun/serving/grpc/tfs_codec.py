"""TensorFlow Serving gRPC messages <-> the data plane's requests, responses, metadata and status.

Numeric tensors travel in ``tensor_content`` (as ovmsclient sends them) or in their typed ``*_val``
field; strings in ``string_val``. Outputs go back in ``tensor_content`` / ``string_val``.

>>> t = numpy_to_tensor(np.arange(3, dtype=np.int64))
>>> tensor_to_numpy(t, "x")
array([0, 1, 2])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vinerun.serving.datatypes import numpy_to_tf, tf_to_numpy, to_numpy
from vinerun.serving.errors import InvalidContentSize, InvalidInput, InvalidPrecision, InvalidShape, NotSupported
from vinerun.serving.grpc.bytes_codec import as_bytes
from vinerun.serving.grpc.protos import tf_framework_pb2 as tf
from vinerun.serving.grpc.protos import tfs_apis_pb2 as tfs
from vinerun.serving.tensors import InferRequest, InferResponse, ModelMetadata, TensorSpec, VersionStatus

SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"
SIGNATURE_DEF_MAP_URL = "type.googleapis.com/tensorflow.serving.SignatureDefMap"

#: TensorFlow DataType number -> the TensorProto field that carries its values
VAL_FIELD: dict[int, str] = {
    1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val", 6: "int_val", 7: "string_val",
    9: "int64_val", 10: "bool_val", 17: "int_val", 19: "half_val", 22: "uint32_val", 23: "uint64_val",
}
STATES = {"START": 10, "LOADING": 20, "AVAILABLE": 30, "UNLOADING": 40, "END": 50}


def tf_name(number: int) -> str:
    """``1`` -> ``"DT_FLOAT"``, from the DataType enum of our tf_framework.proto."""
    value = tf.DataType.DESCRIPTOR.values_by_number.get(number)
    return value.name if value is not None else f"DataType {number}"


def _shape(proto: Any, name: str) -> tuple[list[int], int]:
    if proto.tensor_shape.unknown_rank:
        raise InvalidShape(f"tensor_shape has unknown_rank; input name: {name}")
    shape = [d.size for d in proto.tensor_shape.dim]
    if any(d < 0 for d in shape):
        raise InvalidShape(f"negative dimension in shape {shape}; input name: {name}")
    return shape, math.prod(shape)


def tensor_to_numpy(proto: Any, name: str) -> np.ndarray:
    """A ``TensorProto`` as a NumPy array (DT_STRING: object array of ``bytes``); raises ``InvalidInput``."""
    try:
        dtype = tf_to_numpy(proto.dtype)
    except InvalidPrecision:
        raise InvalidPrecision(f"unsupported dtype {tf_name(proto.dtype)}; input name: {name}") from None
    shape, count = _shape(proto, name)
    if proto.tensor_content and proto.dtype != 7:
        expected = count * dtype.itemsize
        if len(proto.tensor_content) != expected:
            raise InvalidContentSize(f"Expected: {expected} bytes; Actual: {len(proto.tensor_content)} bytes; "
                                     f"input name: {name}")
        return np.frombuffer(proto.tensor_content, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    field = VAL_FIELD[proto.dtype]
    values = getattr(proto, field)
    if len(values) != count:
        raise InvalidContentSize(f"Expected: {count} values in {field}; Actual: {len(values)}; input name: {name}")
    if proto.dtype == 7:
        out = np.empty(count, dtype=object)
        out[:] = list(values)
        return out.reshape(shape)
    if proto.dtype == 19:  # half_val holds the float16 bit patterns
        return np.array(values, dtype=np.uint16).view(np.float16).reshape(shape)
    wide = np.array(values, dtype=np.int64 if dtype.kind in "iu" and dtype != np.uint64 else dtype)
    array = wide.astype(dtype)
    if dtype.kind in "iu" and not np.array_equal(array, wide):
        raise InvalidInput(f"a value in {field} does not fit {tf_name(proto.dtype)}; input name: {name}")
    return array.reshape(shape)


def numpy_to_tensor(array: np.ndarray) -> Any:
    """A NumPy array as a ``TensorProto`` (numbers in ``tensor_content``, strings in ``string_val``)."""
    array = np.asarray(array)
    proto = tf.TensorProto(dtype=numpy_to_tf(array.dtype))
    proto.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=d) for d in array.shape)
    if proto.dtype == 7:
        proto.string_val.extend(as_bytes(v) for v in array.reshape(-1))
    else:
        proto.tensor_content = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return proto


def spec_version(spec: Any) -> str | None:
    """The version a ``ModelSpec`` asks for (``None`` = default); ``version_label`` is not supported."""
    if spec.WhichOneof("version_choice") == "version_label":
        raise NotSupported(f"model_spec.version_label ({spec.version_label!r}); use model_spec.version")
    return str(spec.version.value) if spec.HasField("version") else None


def _model_spec(target: Any, name: str, version: str | int | None) -> None:
    target.name = name
    if version not in (None, ""):
        target.version.value = int(version)
    target.signature_name = SIGNATURE


def decode_predict(msg: Any) -> InferRequest:
    """A ``PredictRequest`` as the data plane's ``InferRequest`` (api TensorFlowServing, interface gRPC)."""
    inputs = {name: tensor_to_numpy(proto, name) for name, proto in msg.inputs.items()}
    return InferRequest(
        model_name=msg.model_spec.name, model_version=spec_version(msg.model_spec), id=None, inputs=inputs,
        outputs=list(msg.output_filter) or None, parameters={}, api="TensorFlowServing", interface="gRPC",
    )


def encode_predict(resp: InferResponse) -> Any:
    """The data plane's ``InferResponse`` as a ``PredictResponse``."""
    msg = tfs.PredictResponse()
    _model_spec(msg.model_spec, resp.model_name, resp.model_version)
    for name, array in resp.outputs.items():
        msg.outputs[name].CopyFrom(numpy_to_tensor(array))
    return msg


def _tensor_info(spec: TensorSpec) -> Any:
    info = tf.TensorInfo(name=spec.name, dtype=numpy_to_tf(to_numpy(spec.datatype)))
    info.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=d) for d in spec.shape)
    return info


def encode_metadata(meta: ModelMetadata, version: str | None) -> Any:
    """``ModelMetadata`` as a ``GetModelMetadataResponse`` with one ``serving_default`` signature."""
    if version in (None, "", "0"):
        version = max(meta.versions, key=int) if meta.versions else None
    signature = tf.SignatureDef(method_name=PREDICT_METHOD)
    for spec in meta.inputs:
        signature.inputs[spec.name].CopyFrom(_tensor_info(spec))
    for spec in meta.outputs:
        signature.outputs[spec.name].CopyFrom(_tensor_info(spec))
    sigmap = tfs.SignatureDefMap()
    sigmap.signature_def[SIGNATURE].CopyFrom(signature)
    msg = tfs.GetModelMetadataResponse()
    _model_spec(msg.model_spec, meta.name, version)
    any_ = msg.metadata["signature_def"]
    any_.type_url, any_.value = SIGNATURE_DEF_MAP_URL, sigmap.SerializeToString()
    return msg


def check_metadata_fields(fields: Any) -> None:
    """Only ``signature_def`` metadata exists, as in TensorFlow Serving and OVMS."""
    unknown = [f for f in fields if f != "signature_def"]
    if unknown:
        raise InvalidInput(f"metadata_field {unknown} not supported; the only field is 'signature_def'")


def encode_status(statuses: list[VersionStatus]) -> Any:
    """``VersionStatus`` records as a ``GetModelStatusResponse``."""
    msg = tfs.GetModelStatusResponse()
    for s in statuses:
        item = msg.model_version_status.add(version=int(s.version), state=STATES.get(s.state, 0))
        item.status.error_code = int(s.error_code)
        item.status.error_message = s.error_message
    return msg
