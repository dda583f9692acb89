"""``ICompiledModel``: a model compiled for one device."""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from vinerun.ir.model import Model
from vinerun.ir.node import Output
from vinerun.plugin_api.async_infer_request import IAsyncInferRequest
from vinerun.plugin_api.executors import IExecutor, StreamsExecutor

if TYPE_CHECKING:
    from vinerun.plugin_api.infer_request import ISyncInferRequest
    from vinerun.plugin_api.request_loop import Hook, IRequestLoop


_executor_lock = threading.Lock()


class ICompiledModel(ABC):
    """A compiled model: its (possibly transformed) graph and a factory of infer requests."""

    def __init__(self, model: Model, device_name: str):
        self.model = model
        self.device_name = device_name

    @property
    def inputs(self) -> list[Output]:
        return self.model.inputs

    @property
    def outputs(self) -> list[Output]:
        return self.model.outputs

    @abstractmethod
    def create_sync_infer_request(self) -> ISyncInferRequest:
        """A new request with its own buffers."""

    def create_async_infer_request(self, sync: ISyncInferRequest) -> IAsyncInferRequest:
        """The asynchronous side of ``sync``: by default one stage, ``sync.infer``, on :meth:`task_executor`."""
        return IAsyncInferRequest(sync, self.task_executor())

    def task_executor(self) -> IExecutor:
        """The executor of this model's requests, made on first use and shut down with the model."""
        executor = self.__dict__.get("_task_executor")
        if executor is None:
            with _executor_lock:
                executor = self.__dict__.get("_task_executor")
                if executor is None:
                    executor = self.make_task_executor()
                    shutdown = getattr(executor, "shutdown", None)
                    if shutdown is not None:
                        weakref.finalize(self, shutdown)
                    self.__dict__["_task_executor"] = executor
        return executor

    def make_task_executor(self) -> IExecutor:
        """Devices override to set streams and their threads; the default is one stream."""
        return StreamsExecutor(1, name=self.device_name)

    def request_loop(self, slots: int, hook: Hook) -> IRequestLoop | None:
        """A loop of ``slots`` requests that the device runs without Python (see :mod:`.request_loop`), or None
        (the default): an ``AsyncInferQueue`` then runs its requests through :meth:`task_executor`."""
        del slots, hook
        return None

    @abstractmethod
    def get_property(self, key: str) -> Any:
        """A compiled-model property (``SUPPORTED_PROPERTIES`` lists them)."""

    def set_property(self, config: dict[str, Any]) -> None:
        from vinerun.errors import PropertyError

        raise PropertyError(f"{self.device_name} compiled models have no writable properties: {sorted(config)}")

    def export_graph(self) -> Model:
        """The graph ``export_model`` stores, which ``IPlugin.import_model`` gets back; it must be writable
        as OpenVINO IR (a device whose passes make internal ops returns the graph before them)."""
        return self.model

    def get_runtime_model(self) -> Model:
        """The executed graph (after device passes)."""
        return self.model
