"""OpenVINO's ``openvino.utils``: helpers for building graphs from Python values (``utils.types``),
op-builder decorators (``utils.decorators``) and, from other modules of this package, request data helpers."""

from vinerun.utils import decorators, types  # noqa: F401  (reachable as ov.utils.types, as in OpenVINO)
