"""The REST transport: an ASGI (Starlette) app serving KServe v2 and TensorFlow Serving REST."""

from vinerun.serving.rest.app import create_app

__all__ = ["create_app"]
