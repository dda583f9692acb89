"""``inference.GRPCInferenceService`` (KServe v2) over the transport-free data plane.

>>> from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb
>>> service = KServeService(dataplane)                      # doctest: +SKIP
>>> service.ServerLive(pb.ServerLiveRequest(), None).live   # doctest: +SKIP
True
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from vinerun.serving.grpc.handlers import as_serving_error
from vinerun.serving.grpc.kserve_codec import decode_infer_request, encode_infer_response
from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb

if TYPE_CHECKING:
    from vinerun.serving.dataplane import DataPlane


class KServeService:
    """The seven KServe v2 RPCs; errors propagate as ``ServingError`` for ``handlers`` to map.

    >>> KServeService(dataplane).ModelReady(pb.ModelReadyRequest(name="m"), None).ready  # doctest: +SKIP
    True
    """

    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane

    def ServerLive(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method names
        return pb.ServerLiveResponse(live=self.dataplane.live())

    def ServerReady(self, request: Any, context: Any) -> Any:  # noqa: N802
        return pb.ServerReadyResponse(ready=self.dataplane.ready())

    def ServerMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
        meta = self.dataplane.server_metadata()
        return pb.ServerMetadataResponse(name=meta["name"], version=str(meta["version"]),
                                         extensions=list(meta.get("extensions", [])))

    def ModelReady(self, request: Any, context: Any) -> Any:  # noqa: N802
        ready = self.dataplane.model_ready(request.name, request.version or None, api="KServe", interface="gRPC")
        return pb.ModelReadyResponse(ready=ready)

    def ModelMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
        meta = self.dataplane.model_metadata(request.name, request.version or None, api="KServe", interface="gRPC")
        msg = pb.ModelMetadataResponse(name=meta.name, versions=[str(v) for v in meta.versions],
                                       platform=meta.platform)
        for target, specs in ((msg.inputs, meta.inputs), (msg.outputs, meta.outputs)):
            for spec in specs:
                target.add(name=spec.name, datatype=spec.datatype, shape=list(spec.shape))
        return msg

    def ModelInfer(self, request: Any, context: Any) -> Any:  # noqa: N802
        return encode_infer_response(self.dataplane.infer(decode_infer_request(request)))

    def ModelStreamInfer(self, requests: Iterator[Any], context: Any) -> Iterator[Any]:  # noqa: N802
        """One response per request; a failed request answers ``error_message`` and the stream goes on."""
        for request in requests:
            try:
                yield pb.ModelStreamInferResponse(infer_response=self.ModelInfer(request, context))
            except Exception as exc:  # noqa: BLE001 - reported in-stream, as Triton does
                yield pb.ModelStreamInferResponse(error_message=as_serving_error(exc, "ModelStreamInfer").message,
                                                  infer_response=pb.ModelInferResponse(id=request.id))
