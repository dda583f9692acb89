"""Generic gRPC method handlers built from a service descriptor, with errors mapped at this edge.

Requests arrive as raw bytes and are parsed here, so a malformed message is an INVALID_ARGUMENT
naming the message type (grpcio would answer INTERNAL). ``ServingError`` becomes the gRPC status of
its ``grpc_code`` with its message; any other exception is logged and answered INTERNAL — a request
never takes the server down.

>>> from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb
>>> class Live:
...     def ServerLive(self, request, context):
...         return pb.ServerLiveResponse(live=True)
>>> handler = service_handler(pb.DESCRIPTOR.services_by_name["GRPCInferenceService"], Live())
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.protobuf import message, message_factory

from vinerun.serving.errors import BadRequest, InferenceFailed, ServingError

log = logging.getLogger("vinerun.serving.grpc")


def status_of(err: ServingError) -> grpc.StatusCode:
    """The ``grpc.StatusCode`` named by ``err.grpc_code`` (UNKNOWN for a name grpc does not know)."""
    return getattr(grpc.StatusCode, err.grpc_code, grpc.StatusCode.UNKNOWN)


def as_serving_error(exc: BaseException, method: str) -> ServingError:
    """``exc`` itself when it is a ``ServingError``; otherwise an ``InferenceFailed`` naming it (and logged)."""
    if isinstance(exc, ServingError):
        return exc
    log.exception("gRPC %s failed", method)
    return InferenceFailed(f"{type(exc).__name__}: {exc}")


def _parse(cls: type, data: bytes) -> Any:
    try:
        return cls.FromString(data)
    except message.DecodeError as exc:
        raise BadRequest(f"malformed {cls.DESCRIPTOR.full_name}: {exc}") from None


def _unary(method: Callable, cls: type, name: str) -> Callable:
    def handle(data: bytes, context: grpc.ServicerContext) -> Any:
        try:
            return method(_parse(cls, data), context)
        except Exception as exc:  # noqa: BLE001 - every error becomes a status, never a dead server
            err = as_serving_error(exc, name)
        context.abort(status_of(err), err.message)

    return handle


def _stream(method: Callable, cls: type, name: str) -> Callable:
    def handle(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from method((_parse(cls, data) for data in requests), context)
            return
        except Exception as exc:  # noqa: BLE001
            err = as_serving_error(exc, name)
        context.abort(status_of(err), err.message)

    return handle


def service_handler(service: Any, servicer: object) -> grpc.GenericRpcHandler:
    """A handler serving each method of ``service`` (a ServiceDescriptor) that ``servicer`` defines."""
    handlers = {}
    for method in service.methods:
        impl = getattr(servicer, method.name, None)
        if impl is None:
            continue  # grpcio answers UNIMPLEMENTED
        request_cls = message_factory.GetMessageClass(method.input_type)
        response_cls = message_factory.GetMessageClass(method.output_type)
        serialize = response_cls.SerializeToString
        if method.client_streaming and method.server_streaming:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(
                _stream(impl, request_cls, method.full_name), response_serializer=serialize)
        elif not method.client_streaming and not method.server_streaming:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                _unary(impl, request_cls, method.full_name), response_serializer=serialize)
        else:
            raise TypeError(f"{method.full_name}: only unary and bidirectional-streaming RPCs are supported")
    return grpc.method_handlers_generic_handler(service.full_name, handlers)
