"""The gRPC transport: KServe v2 ``GRPCInferenceService`` and TensorFlow Serving's API on one port.

>>> from vinerun.serving.grpc import start_grpc_server
>>> server = start_grpc_server(dataplane, "127.0.0.1", 0, workers=1)  # doctest: +SKIP
"""

from vinerun.serving.grpc.server import GrpcServer, start_grpc_server

__all__ = ["GrpcServer", "start_grpc_server"]
