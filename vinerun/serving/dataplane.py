"""The data plane: everything a transport needs, free of HTTP and gRPC.

Validates requests against the served model, runs them on the version's ``AsyncInferQueue``, and
records the ``ovms_*`` metrics for every call (transports never touch metrics).

>>> plane = DataPlane(manager)                     # doctest: +SKIP
>>> plane.infer(InferRequest("m", None, None, {"x": array})).outputs   # doctest: +SKIP
{'y': array(...)}
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

import numpy as np

from vinerun import __version__
from vinerun.errors import InputError
from vinerun.serving.errors import InferenceFailed, InvalidInput, InvalidOutput, ServingError
from vinerun.serving.metrics import ServingMetrics
from vinerun.serving.model_manager import ModelManager
from vinerun.serving.servable import ServedVersion
from vinerun.serving.tensors import (
    InferRequest,
    InferResponse,
    ModelMetadata,
    TensorSpec,
    VersionStatus,
    validate_inputs,
)

__all__ = ["DataPlane", "InferRequest", "InferResponse", "ModelMetadata", "TensorSpec", "VersionStatus"]

SERVER_NAME = "vinerun"
EXTENSIONS = ["binary_tensor_data", "model_repository"]
_INFER_METHOD = {"KServe": "ModelInfer", "TensorFlowServing": "Predict"}


class DataPlane:
    """Health, metadata, status and inference over a :class:`ModelManager`.

    >>> plane = DataPlane(manager, ServingMetrics())   # doctest: +SKIP
    >>> plane.model_ready("m")                          # doctest: +SKIP
    True
    """

    def __init__(self, manager: ModelManager, metrics: ServingMetrics | None = None) -> None:
        self.manager = manager
        self.metrics = metrics or ServingMetrics()
        self.started = False
        manager.on_change.append(self._version_changed)

    def _version_changed(self, name: str, version: int, served: ServedVersion | None) -> None:
        labels = (name, str(version))
        if served is None:
            for family in ("ovms_streams", "ovms_infer_req_queue_size", "ovms_current_requests"):
                self.metrics.remove(family, labels)
            return
        self.metrics.set("ovms_streams", labels, served.streams)
        self.metrics.set("ovms_infer_req_queue_size", labels, len(served.queue))
        self.metrics.set("ovms_current_requests", labels, 0)

    # --- health and metadata ------------------------------------------------------------
    def live(self) -> bool:
        return True

    def ready(self) -> bool:
        """Ready once the initial load is done and every model has a version available."""
        return self.started and all(e.available() for e in self.manager.models.values())

    def server_metadata(self) -> dict[str, Any]:
        return {"name": SERVER_NAME, "version": __version__, "extensions": list(EXTENSIONS)}

    def _record(self, api: str, interface: str, method: str, name: str, version: Any, ok: bool) -> None:
        self.metrics.request(api, interface, method, name, str(version or "0"), ok)

    def model_ready(self, name: str, version: str | None = None, api: str = "KServe",
                    interface: str = "REST") -> bool:
        """Whether the version (default: the highest available) can serve; raises if unknown."""
        try:
            served = self.manager.acquire(name, version, wait=False)
        except ServingError:
            self._record(api, interface, "ModelReady", name, version, False)
            raise
        self._record(api, interface, "ModelReady", name, version, True)
        if served is None:
            return False
        served.leave()
        return True

    def model_metadata(self, name: str, version: str | None = None, api: str = "KServe",
                       interface: str = "REST") -> ModelMetadata:
        method = "ModelMetadata" if api == "KServe" else "GetModelMetadata"
        try:
            served = self.manager.acquire(name, version)
        except ServingError:
            self._record(api, interface, method, name, version, False)
            raise
        try:
            versions = [str(v) for v in self.manager.entry(name).available()]
            meta = ModelMetadata(name, versions, "OpenVINO", list(served.inputs), list(served.outputs))
            meta.served_version = str(served.version)  # type: ignore[attr-defined]
        finally:
            served.leave()
        self._record(api, interface, method, name, served.version, True)
        return meta

    def model_status(self, name: str, version: str | None = None, api: str = "TensorFlowServing",
                     interface: str = "REST") -> list[VersionStatus]:
        try:
            status = self.manager.version_status(name, version)
        except ServingError:
            self._record(api, interface, "GetModelStatus", name, version, False)
            raise
        self._record(api, interface, "GetModelStatus", name, version, True)
        return status

    def input_specs(self, name: str, version: str | None = None, api: str = "TensorFlowServing",
                    interface: str = "REST") -> list[TensorSpec]:
        """The inputs of the version a request would use (for transports that need dtypes to decode a
        predict request); a failed lookup counts as a failed ``Predict``."""
        try:
            with self.manager.use(name, version) as served:
                return list(served.inputs)
        except ServingError:
            self._record(api, interface, _INFER_METHOD.get(api, "ModelInfer"), name, version, False)
            raise

    def reload_config(self) -> bool:
        """``POST /v1/config/reload``: ``True`` if anything changed."""
        return self.manager.reload()

    def config_status(self) -> dict[str, Any]:
        return self.manager.config_status()

    # --- inference ---------------------------------------------------------------------
    def _prepare(self, served: ServedVersion, request: InferRequest) -> None:
        validate_inputs(request.inputs, served.inputs)
        if request.outputs:
            known = {o.name for o in served.outputs}
            for name in request.outputs:
                if name not in known:
                    raise InvalidOutput(f"{name!r}; the model's outputs are {sorted(known)}")

    def _respond(self, served: ServedVersion, request: InferRequest, arrays: list[np.ndarray]) -> InferResponse:
        wanted = set(request.outputs) if request.outputs else None
        outputs = {spec.name: a for spec, a in zip(served.outputs, arrays, strict=True)
                   if wanted is None or spec.name in wanted}
        return InferResponse(request.model_name, str(served.version), request.id, outputs)

    def _finish(self, request: InferRequest, served: ServedVersion | None, t0: float, ok: bool) -> None:
        version = served.version if served is not None else request.model_version
        method = _INFER_METHOD.get(request.api, "ModelInfer")
        self._record(request.api, request.interface, method, request.model_name, version, ok)
        if served is not None:
            labels = (request.model_name, str(served.version))
            self.metrics.observe("ovms_request_time_us", (request.interface, *labels),
                                 (time.perf_counter() - t0) * 1e6)
            self.metrics.add("ovms_current_requests", labels, -1)
            served.leave()

    def _started(self, served: ServedVersion, future: concurrent.futures.Future, queued: float) -> None:
        labels = (served.name, str(served.version))
        self.metrics.observe("ovms_wait_for_infer_req_time_us", labels, (future.started_at - queued) * 1e6)
        future.add_done_callback(lambda f: self.metrics.observe(
            "ovms_inference_time_us", labels, (time.perf_counter() - f.started_at) * 1e6))

    @staticmethod
    def _error(e: BaseException) -> ServingError:
        if isinstance(e, ServingError):
            return e
        if isinstance(e, (InputError, ValueError, TypeError)):
            return InvalidInput(str(e))
        return InferenceFailed(f"{type(e).__name__}: {e}")

    def infer(self, request: InferRequest) -> InferResponse:
        """Blocking inference (thread-safe; for threaded transports)."""
        t0 = time.perf_counter()
        served = None
        try:
            served = self.manager.acquire(request.model_name, request.model_version)
            self.metrics.add("ovms_current_requests", (request.model_name, str(served.version)), 1)
            self._prepare(served, request)
            queued = time.perf_counter()
            future = served.submit(request.inputs)
            self._started(served, future, queued)
            response = self._respond(served, request, future.result())
        except BaseException as e:
            self._finish(request, served, t0, False)
            raise self._error(e) from e
        self._finish(request, served, t0, True)
        return response

    async def infer_async(self, request: InferRequest) -> InferResponse:
        """Inference for asyncio transports: never blocks the event loop."""
        t0 = time.perf_counter()
        served = None
        try:
            served = self.manager.acquire(request.model_name, request.model_version, wait=False)
            if served is None:
                served = await asyncio.to_thread(self.manager.acquire, request.model_name, request.model_version)
            self.metrics.add("ovms_current_requests", (request.model_name, str(served.version)), 1)
            self._prepare(served, request)
            queued = time.perf_counter()
            future = await served.submit_async(request.inputs)
            self._started(served, future, queued)
            response = self._respond(served, request, await asyncio.wrap_future(future))
        except BaseException as e:
            self._finish(request, served, t0, False)
            if isinstance(e, asyncio.CancelledError):
                raise
            raise self._error(e) from e
        self._finish(request, served, t0, True)
        return response
