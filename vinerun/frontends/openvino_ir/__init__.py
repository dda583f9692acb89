"""The OpenVINO IR frontend: ``read_ir(xml, weights)`` and ``write_ir(model, xml_path, bin_path)``."""

from vinerun.frontends.openvino_ir import bodies  # noqa: F401  (registers If / Loop / TensorIterator)
from vinerun.frontends.openvino_ir.reader import read_ir
from vinerun.frontends.openvino_ir.writer import serialize_ir, write_ir

__all__ = ["read_ir", "serialize_ir", "write_ir"]
