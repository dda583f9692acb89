"""``ICompiledModel``: a model compiled for one device."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from vinerun.ir.model import Model
from vinerun.ir.node import Output

if TYPE_CHECKING:
    from vinerun.plugin_api.infer_request import ISyncInferRequest


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

    @abstractmethod
    def get_property(self, key: str) -> Any:
        """A compiled-model property (``SUPPORTED_PROPERTIES`` lists them)."""

    def set_property(self, config: dict[str, Any]) -> None:
        from vinerun.errors import PropertyError

        raise PropertyError(f"{self.device_name} compiled models have no writable properties: {sorted(config)}")

    def get_runtime_model(self) -> Model:
        """The executed graph (after device passes)."""
        return self.model
