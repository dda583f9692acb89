"""The REST app: KServe v2 and TensorFlow Serving routes over one :class:`DataPlane`.

Routing follows OVMS's regexes; one handler turns a ``ServingError`` into ``err.http_status`` and
``{"error": err.message}``. Bodies are read with a size limit.

>>> app = create_app(plane, max_body_bytes=1 << 30)   # doctest: +SKIP
>>> uvicorn.run(app, port=8000)                       # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vinerun.serving.dataplane import DataPlane
from vinerun.serving.errors import (
    InferenceFailed,
    MethodNotAllowed,
    NotFoundRoute,
    RequestTooLarge,
    ServerNotReady,
    ServingError,
)
from vinerun.serving.rest import kserve_codec, tfs_codec
from vinerun.serving.tensors import InferRequest

log = logging.getLogger("vinerun.serving")
_M = r"(?P<model>[^/:]+)(?:/versions/(?P<version>\d+))?"
Handler = Callable[[DataPlane, Request, dict[str, str], Any], Awaitable[Response]]


def _json(doc: Any, status: int = 200) -> Response:
    return Response(json.dumps(doc, separators=(",", ":")), status, media_type="application/json")


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refusing more than ``limit`` bytes (by Content-Length first, then while reading)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestTooLarge(f"body of {declared} bytes exceeds the limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestTooLarge(f"body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


# --- KServe v2 ----------------------------------------------------------------------------
async def live(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    return _json({"live": plane.live()})


async def ready(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    if not plane.ready():
        raise ServerNotReady()
    return _json({"ready": True})


async def server_metadata(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    return _json(plane.server_metadata())


async def model_metadata(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    meta = plane.model_metadata(m["model"], m["version"])
    spec = [[{"name": t.name, "datatype": t.datatype, "shape": t.shape} for t in ts]
            for ts in (meta.inputs, meta.outputs)]
    return _json({"name": meta.name, "versions": meta.versions, "platform": meta.platform,
                  "inputs": spec[0], "outputs": spec[1]})


async def model_ready(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    if not plane.model_ready(m["model"], m["version"]):
        return _json({"error": "Model with requested version is not loaded yet"}, 404)
    return _json({"name": m["model"], "ready": True})


async def infer(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    body = await read_body(request, limit)
    req = kserve_codec.decode_request(body, request.headers.get("inference-header-content-length"),
                                      m["model"], m["version"])
    resp = await plane.infer_async(req)
    payload, header_len = kserve_codec.encode_response(resp, req)
    headers = {"Inference-Header-Content-Length": str(header_len)} if header_len is not None else None
    return Response(payload, 200, headers=headers, media_type="application/json")


# --- config endpoints ---------------------------------------------------------------------
async def config_status(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    return _json(plane.config_status())


async def config_reload(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    changed = await asyncio.to_thread(plane.reload_config)
    return _json(plane.config_status(), 201 if changed else 200)


# --- TensorFlow Serving -------------------------------------------------------------------
async def tfs_status(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    return _json(tfs_codec.encode_status(plane.model_status(m["model"], m["version"])))


async def tfs_metadata(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    meta = plane.model_metadata(m["model"], m["version"], api="TensorFlowServing")
    return _json(tfs_codec.encode_metadata(meta, getattr(meta, "served_version", meta.versions[-1])))


async def tfs_predict(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    body = await read_body(request, limit)
    specs = plane.input_specs(m["model"], m["version"])
    inputs, fmt = tfs_codec.decode_predict(body, specs)
    resp = await plane.infer_async(InferRequest(m["model"], m["version"], None, inputs, None, {},
                                                "TensorFlowServing", "REST"))
    return _json(tfs_codec.encode_predict(resp.outputs, fmt))


async def metrics(plane: DataPlane, request: Request, m: dict, limit: int) -> Response:
    return Response(plane.metrics.render(), 200, media_type="text/plain; version=0.0.4; charset=utf-8")


#: (method, path regex, handler) — the first full match wins
_TABLE: list[tuple[str, str, Handler]] = [
    ("GET", r"/v2/health/live", live),
    ("GET", r"/v2/health/ready", ready),
    ("GET", r"/v2/?", server_metadata),
    ("GET", rf"/v2/models/{_M}/ready", model_ready),
    ("POST", rf"/v2/models/{_M}/infer", infer),
    ("GET", rf"/v2/models/{_M}/?", model_metadata),
    ("GET", r"/v1/config", config_status),
    ("POST", r"/v1/config/reload", config_reload),
    ("GET", rf"/v1/models/{_M}/metadata", tfs_metadata),
    ("POST", rf"/v1/models/{_M}:predict", tfs_predict),
    ("GET", rf"/v1/models/{_M}", tfs_status),
]
ROUTES: list[tuple[str, re.Pattern, Handler]] = [(method, re.compile(p), h) for method, p, h in _TABLE]
METRICS_ROUTE = ("GET", re.compile(r"/metrics"), metrics)


def _error(err: ServingError) -> Response:
    return _json({"error": err.message}, err.http_status)


def create_app(plane: DataPlane, max_body_bytes: int = 1 << 30, metrics_enabled: bool = False) -> Starlette:
    """The ASGI app; every path goes through one dispatcher so unknown URLs and methods answer 404/405."""
    routes = ROUTES + ([METRICS_ROUTE] if metrics_enabled else [])

    async def dispatch(request: Request) -> Response:
        path = request.url.path
        matched_path = False
        try:
            for method, pattern, handler in routes:
                match = pattern.fullmatch(path)
                if match is None:
                    continue
                matched_path = True
                if request.method != method:
                    continue
                return await handler(plane, request, match.groupdict(), max_body_bytes)
            if matched_path:
                raise MethodNotAllowed(f"{request.method} {path}")
            raise NotFoundRoute(path)
        except ServingError as e:
            return _error(e)
        except Exception as e:  # noqa: BLE001 - a bug answers 500 and is logged; the server keeps serving
            log.exception("vinerun serve: %s %s failed", request.method, path)
            return _error(InferenceFailed(f"{type(e).__name__}: {e}"))

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
    return Starlette(routes=[Route("/{path:path}", dispatch, methods=methods)])


__all__ = ["create_app", "read_body"]
