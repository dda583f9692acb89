"""TensorFlow Serving's ``PredictionService`` and ``ModelService`` over the data plane (for ovmsclient).

>>> from vinerun.serving.grpc.protos import tfs_apis_pb2 as tfs
>>> TFSPredictionService(dataplane).Predict(tfs.PredictRequest(), None)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vinerun.serving.grpc.tfs_codec import (
    check_metadata_fields,
    decode_predict,
    encode_metadata,
    encode_predict,
    encode_status,
    spec_version,
)

if TYPE_CHECKING:
    from vinerun.serving.dataplane import DataPlane


class TFSPredictionService:
    """``tensorflow.serving.PredictionService``: Predict and GetModelMetadata.

    >>> TFSPredictionService(dataplane)  # doctest: +SKIP
    """

    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    def Predict(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method names
        return encode_predict(self.dataplane.infer(decode_predict(request)))

    def GetModelMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
        check_metadata_fields(request.metadata_field)
        version = spec_version(request.model_spec)
        meta = self.dataplane.model_metadata(request.model_spec.name, version, api="TensorFlowServing",
                                             interface="gRPC")
        return encode_metadata(meta, getattr(meta, "served_version", version))


class TFSModelService:
    """``tensorflow.serving.ModelService``: GetModelStatus (HandleReloadConfigRequest is UNIMPLEMENTED).

    >>> TFSModelService(dataplane)  # doctest: +SKIP
    """

    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    def GetModelStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
        spec = request.model_spec
        return encode_status(self.dataplane.model_status(spec.name, spec_version(spec), api="TensorFlowServing",
                                                         interface="gRPC"))
