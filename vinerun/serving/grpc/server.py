"""The gRPC endpoint: KServe v2 and TensorFlow Serving services on one port, as OVMS serves them.

>>> server = start_grpc_server(dataplane, "127.0.0.1", 0, workers=1)  # doctest: +SKIP
>>> server.port  # the bound port; 0 picked a free one              # doctest: +SKIP
>>> server.stop()                                                  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from concurrent import futures
from typing import TYPE_CHECKING

import grpc

from vinerun.errors import VinerunError
from vinerun.serving.grpc.handlers import service_handler
from vinerun.serving.grpc.kserve_service import KServeService
from vinerun.serving.grpc.protos import grpc_predict_v2_pb2, tfs_apis_pb2
from vinerun.serving.grpc.tfs_service import TFSModelService, TFSPredictionService

if TYPE_CHECKING:
    from vinerun.serving.dataplane import DataPlane

log = logging.getLogger("vinerun.serving.grpc")

#: OVMS hard-codes a 1 GiB receive limit (grpcservermodule.cpp); answers may be as large
MAX_MESSAGE_BYTES = 1 << 30
#: request threads per ``--grpc_workers``: requests block in ``DataPlane.infer`` while the model runs
THREADS_PER_WORKER = 16


class GrpcServer:
    """A started gRPC server: ``port`` is the bound port, ``stop()`` shuts it down.

    >>> server = start_grpc_server(dataplane, "127.0.0.1", 0, workers=1)  # doctest: +SKIP
    >>> server.stop(grace=1.0)                                         # doctest: +SKIP
    """

    def __init__(self, server: grpc.Server, port: int, addresses: list[str]) -> None:
        self._server = server
        self.port = port
        self.addresses = addresses

    def stop(self, grace: float | None = None) -> None:
        """Stop accepting calls; running calls get ``grace`` seconds (None: cancelled now). Blocks until done."""
        self._server.stop(grace).wait()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stops (or ``timeout``); True when it stopped."""
        return self._server.wait_for_termination(timeout)


def _endpoint(address: str, port: int) -> str:
    host = address.strip()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6
    return f"{host}:{port}"


def start_grpc_server(dataplane: DataPlane, bind_address: str, port: int, workers: int = 1) -> GrpcServer:
    """Serve ``inference.GRPCInferenceService`` and TFS ``PredictionService``/``ModelService``; non-blocking.

    ``bind_address`` may be a comma list (OVMS's ``--grpc_bind_address``); ``port`` 0 picks a free port.
    Raises ``VinerunError`` naming the address when it cannot be bound.
    """
    if workers < 1:
        raise VinerunError(f"grpc workers must be >= 1, got {workers}")
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=THREADS_PER_WORKER * workers, thread_name_prefix="vinerun-grpc"),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
        ],
    )
    kserve = grpc_predict_v2_pb2.DESCRIPTOR.services_by_name
    tfs = tfs_apis_pb2.DESCRIPTOR.services_by_name
    server.add_generic_rpc_handlers([
        service_handler(kserve["GRPCInferenceService"], KServeService(dataplane)),
        service_handler(tfs["PredictionService"], TFSPredictionService(dataplane)),
        service_handler(tfs["ModelService"], TFSModelService(dataplane)),
    ])
    addresses = [a.strip() for a in bind_address.split(",") if a.strip()] or ["0.0.0.0"]
    bound = port
    for address in addresses:
        endpoint = _endpoint(address, bound)
        try:
            got = server.add_insecure_port(endpoint)
        except RuntimeError as exc:
            got, reason = 0, str(exc)
        else:
            reason = "address in use or not available"
        if got == 0:
            server.stop(None)
            raise VinerunError(f"cannot bind the gRPC server to {endpoint}: {reason}")
        bound = got
    server.start()
    log.debug("gRPC (KServe v2, TensorFlow Serving) listening on %s", ", ".join(_endpoint(a, bound) for a in addresses))
    return GrpcServer(server, bound, addresses)
