"""OpenVINO's ``openvino.helpers``: ``tensor_from_file``, and packing sub-byte values into bytes and back."""

from vinerun.helpers.packing import pack_data, unpack_data
from vinerun.helpers.tensor_file import tensor_from_file

__all__ = ["pack_data", "tensor_from_file", "unpack_data"]
