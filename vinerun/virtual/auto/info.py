"""Who answered a request: per-request facts of AUTO and MULTI (vinerun only; OpenVINO has none).

>>> request = core.compile_model(model, "AUTO:GNA,CPU").create_infer_request()   # doctest: +SKIP
>>> request.infer({"x": x})                                                     # doctest: +SKIP
>>> execution_device(request), outputs_from_helper(request)                     # doctest: +SKIP
('CPU', True)
"""

from __future__ import annotations

from typing import Any

from vinerun.errors import DeviceError


def _auto_request(request: Any) -> Any:
    impl = getattr(request, "_impl", request)  # a runtime InferRequest, or the device request itself
    if not hasattr(impl, "last_device") or not hasattr(impl, "from_helper"):
        raise DeviceError(f"{type(request).__name__} is not a request of an AUTO or MULTI compiled model")
    return impl


def execution_device(request: Any) -> str | None:
    """The device that produced the request's latest outputs (``None`` before its first inference)."""
    return _auto_request(request).last_device


def outputs_from_helper(request: Any) -> bool:
    """Whether the request's latest outputs came from the CPU start-up helper instead of the target."""
    return bool(_auto_request(request).from_helper)
