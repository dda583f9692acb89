"""Remote contexts and tensors (OpenVINO's ``RemoteContext`` / ``RemoteTensor``): the base classes live in
:mod:`vinerun.plugin_api.remote`, where devices subclass them."""

from vinerun.plugin_api.remote import RemoteContext, RemoteTensor

__all__ = ["RemoteContext", "RemoteTensor"]
