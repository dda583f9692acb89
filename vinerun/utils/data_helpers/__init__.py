"""OpenVINO's ``openvino.utils.data_helpers``: ``OVDict``, the read-only mapping that ``infer`` returns, and
``tensor_from_file``. How a call's data reaches a request's tensors is :mod:`vinerun.runtime.request_tensors`."""

from vinerun.helpers.tensor_file import tensor_from_file
from vinerun.runtime.results import OVDict

__all__ = ["OVDict", "tensor_from_file"]
