"""The private protobuf descriptor pool that holds vinerun's serving messages.

tritonclient.grpc, the kserve SDK and ovmsclient register ``inference.*`` and ``tensorflow.*``
messages under the same full names in protobuf's *default* pool; the generated modules here
register theirs in ``POOL`` instead, so all of them can be imported in one process.

>>> from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb
>>> pb.ServerLiveResponse.DESCRIPTOR.file.pool is POOL
True
"""

from __future__ import annotations

from google.protobuf import any_pb2, descriptor_pool, wrappers_pb2

POOL = descriptor_pool.DescriptorPool()

# the well-known types our .proto files import
for _wkt in (any_pb2, wrappers_pb2):
    POOL.AddSerializedFile(_wkt.DESCRIPTOR.serialized_pb)
