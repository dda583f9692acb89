"""Remote contexts and tensors: device memory shared with the application (OpenVINO's ``RemoteContext`` /
``RemoteTensor``).

A device that has device memory gives its context through ``get_default_context`` / ``create_context`` on
its plugin (the GPU does; a device without one raises, as OpenVINO's CPU plugin). The classes are here for
``isinstance`` checks and for the devices to subclass.
"""

from __future__ import annotations

from typing import Any


class RemoteContext:
    """A device's memory context: names the device and makes tensors that live there."""

    def get_device_name(self) -> str:
        raise NotImplementedError

    def get_params(self) -> dict[str, Any]:
        """The device handles behind the context (``CONTEXT_TYPE``, ...)."""
        raise NotImplementedError

    def create_tensor(self, type: Any, shape: Any, properties: dict[str, Any]) -> RemoteTensor:  # noqa: A002
        raise NotImplementedError

    def create_host_tensor(self, type: Any, shape: Any) -> Any:  # noqa: A002
        """A host ``Tensor`` the device can read fast (pinned memory)."""
        raise NotImplementedError


class RemoteTensor:
    """A tensor in device memory. Only a context creates one (``context.create_tensor``); as in OpenVINO,
    ``RemoteTensor(array)`` raises ``TypeError``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if type(self) is RemoteTensor:
            raise TypeError("openvino.RemoteTensor: No constructor defined!")
