"""ONE table from domain error to HTTP status and gRPC code, with OVMS's message texts.

Transports never invent codes: REST answers ``err.http_status`` with ``{"error": err.message}`` and
gRPC aborts with ``grpc.StatusCode[err.grpc_code]``.

>>> err = ModelNotFound()
>>> (err.http_status, err.grpc_code, err.message)
(404, 'NOT_FOUND', 'Model with requested name is not found')
"""

from __future__ import annotations


class ServingError(Exception):
    """Base of every error the server reports to a client; subclasses fix the status and base message.

    ``ServingError("details")`` reads ``"<base> - details"`` as OVMS writes it.
    """

    http_status: int = 500
    grpc_code: str = "UNKNOWN"
    base_message: str = "Unknown error"

    def __init__(self, details: str = "") -> None:
        self.message = f"{self.base_message} - {details}" if details else self.base_message
        super().__init__(self.message)


class ModelNotFound(ServingError):
    http_status, grpc_code, base_message = 404, "NOT_FOUND", "Model with requested name is not found"


class ModelVersionNotFound(ServingError):
    http_status, grpc_code, base_message = 404, "NOT_FOUND", "Model with requested version is not found"


class ModelVersionRetired(ServingError):
    http_status, grpc_code, base_message = 404, "NOT_FOUND", "Model with requested version is retired"


class ModelNotLoadedYet(ServingError):
    http_status, grpc_code, base_message = 404, "UNAVAILABLE", "Model with requested version is not loaded yet"


class ServerNotReady(ServingError):
    http_status, grpc_code, base_message = 503, "UNAVAILABLE", "Server is not ready"


class InvalidInput(ServingError):
    """A request whose tensors do not fit the model (the message names the input)."""

    http_status, grpc_code, base_message = 400, "INVALID_ARGUMENT", "Invalid input"


class InvalidShape(InvalidInput):
    base_message = "Invalid input shape"


class InvalidPrecision(InvalidInput):
    base_message = "Invalid input precision"


class InvalidInputCount(InvalidInput):
    base_message = "Invalid number of inputs"


class MissingInput(InvalidInput):
    base_message = "Missing input with specific name"


class UnexpectedInput(InvalidInput):
    base_message = "Unexpected input"


class InvalidContentSize(InvalidInput):
    base_message = "Invalid content size of tensor proto"


class InvalidOutput(InvalidInput):
    base_message = "Invalid output name"


class BadRequest(ServingError):
    """A request that cannot be parsed (malformed JSON, broken binary payload, bad field)."""

    http_status, grpc_code, base_message = 400, "INVALID_ARGUMENT", "Invalid request"


class NotFoundRoute(ServingError):
    http_status, grpc_code, base_message = 404, "UNIMPLEMENTED", "Invalid request URL"


class MethodNotAllowed(ServingError):
    http_status, grpc_code, base_message = 405, "UNIMPLEMENTED", "Unsupported method"


class RequestTooLarge(ServingError):
    http_status, grpc_code, base_message = 413, "RESOURCE_EXHAUSTED", "Request is too large"


class ReshapeFailed(ServingError):
    http_status, grpc_code = 412, "FAILED_PRECONDITION"
    base_message = "Model could not be reshaped with requested shape"


class ConfigReloadFailed(ServingError):
    http_status, grpc_code = 500, "INTERNAL"
    base_message = "Reloading config file failed. Check server logs for more info."


class NotSupported(ServingError):
    http_status, grpc_code, base_message = 501, "UNIMPLEMENTED", "Not supported"


class InferenceFailed(ServingError):
    http_status, grpc_code, base_message = 500, "INTERNAL", "Internal server error"
