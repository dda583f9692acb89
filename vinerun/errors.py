"""One exception tree for vinerun.

Every message names what was at fault (file, node, input, property) so a user can fix it.
The classes subclass the built-in exceptions OpenVINO users already catch
(``RuntimeError``, ``ValueError``, ``TypeError``).
"""

from __future__ import annotations


class VinerunError(RuntimeError):
    """Base class of every error vinerun raises on purpose."""


class ModelReadError(VinerunError):
    """A model file or buffer could not be read (missing, truncated, corrupt, bad format)."""


class BlobError(ModelReadError):
    """A compiled-model blob (``export_model``, ``CACHE_DIR``) is not a blob, is truncated or corrupt, or was
    made by another vinerun version or for another device."""


class UnsupportedOpError(VinerunError):
    """A model uses an operation (or an attribute value) vinerun does not implement."""


class ValidationError(VinerunError, ValueError):
    """A node's inputs or attributes are inconsistent (shape or type inference failed)."""


class InferenceError(VinerunError):
    """Running a compiled model failed; the message names the node that failed."""


class InputError(VinerunError, ValueError):
    """Data passed to ``infer`` does not fit the model (missing input, wrong shape or type)."""


class PropertyError(VinerunError, ValueError):
    """An unknown property key, or a value of the wrong type or outside the allowed set."""


class DeviceError(VinerunError):
    """An unknown device name, or a device that cannot do what was asked."""


class NotSupportedError(VinerunError, NotImplementedError):
    """A documented limitation: the feature exists in OpenVINO but not (yet) in vinerun."""


class PropertyTypeError(PropertyError, TypeError):
    """A property value of the wrong Python type (e.g. a string where an integer is expected)."""


class RequestCancelledError(VinerunError):
    """``wait()`` on an infer request that was cancelled (``InferRequest.cancel()``) before it finished."""


class RequestBusyError(VinerunError):
    """An infer request was used (``infer``, ``start_async``, tensors) while an asynchronous run is in flight."""


class CallbackError(VinerunError):
    """A user callback of an asynchronous request raised; the original exception is the ``__cause__``."""
