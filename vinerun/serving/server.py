"""``Server``: loads the models, then serves REST (uvicorn) and gRPC until SIGINT/SIGTERM.

Shutdown is graceful: the listeners stop accepting, requests in flight finish, then models unload.

>>> server = Server(ServerConfig.from_args(["--rest_port", "8000"]))   # the demo model  # doctest: +SKIP
>>> server.run()                                                       # blocks           # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

from vinerun.runtime import Core
from vinerun.serving.config import DEFAULT_METRICS, OPTIONAL_METRICS, ServerConfig
from vinerun.serving.dataplane import DataPlane
from vinerun.serving.metrics import ServingMetrics
from vinerun.serving.model_manager import ModelManager
from vinerun.serving.policy import ConfigError

log = logging.getLogger("vinerun.serving")
_LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING,
           "ERROR": logging.ERROR}


def _sockets(addresses: str, port: int) -> list[socket.socket]:
    """Bound listening sockets for a comma list of addresses (IPv4 or IPv6)."""
    out = []
    for host in [a.strip() for a in addresses.split(",") if a.strip()]:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto=IPPROTO_TCP matters: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say TCP,
        # and with Nagle on every keep-alive response waits ~40 ms for the client's delayed ACK
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            sock.close()
            raise ConfigError(f"cannot listen on {host}:{port} (--rest_bind_address/--rest_port): "
                              f"{e.strerror}") from None
        sock.listen(2048)
        sock.set_inheritable(True)
        out.append(sock)
    return out


def _uvicorn_server_class() -> type:
    import uvicorn

    class UvicornServer(uvicorn.Server):
        """uvicorn without its own signal capture (it re-raises the signal after shutdown, which would kill
        the process before models unload); :class:`Server` installs the handlers."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        def request_exit(self) -> None:
            self.should_exit = True

    return UvicornServer


class Server:
    """The whole model server for one :class:`ServerConfig`.

    >>> Server(ServerConfig.from_args(["--rest_port", "8000"])).run()   # doctest: +SKIP
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        core = Core()
        if config.cache_dir:
            core.set_property({"CACHE_DIR": config.cache_dir})
        self.manager = ModelManager(core, config)
        enabled = config.metrics_list
        self.plane = DataPlane(self.manager, ServingMetrics(enabled))
        self.grpc: Any = None
        self.rest_ports: list[int] = []

    def describe(self) -> str:
        """The start-up banner: where it listens and what it serves."""
        lines = []
        for port in self.rest_ports:
            lines.append(f"vinerun serve: REST (KServe v2 /v2/..., TensorFlow Serving /v1/...) listening on "
                         f"http://{self.config.rest_bind_address}:{port}")
        if self.grpc is not None:
            lines.append(f"vinerun serve: gRPC (inference.GRPCInferenceService, tensorflow.serving) listening on "
                         f"{self.config.grpc_bind_address}:{self.grpc.port}")
        for name, entry in self.manager.models.items():
            lines.append(f"vinerun serve: model '{name}' versions {entry.available()} on "
                         f"{entry.config.target_device} from {entry.config.base_path}")
        if self.config.demo:
            hint = f"; try curl http://127.0.0.1:{self.rest_ports[0]}/v2/models/demo" if self.rest_ports else ""
            lines.append(f"vinerun serve: this is the bundled demo (input 'image' FP32 [1,3,32,32] -> 'logits'){hint}")
        if self.config.metrics_enable:
            lines.append("vinerun serve: Prometheus metrics at /metrics")
        return "\n".join(lines)

    def _apply_monitoring(self) -> None:
        """config.json's ``monitoring.metrics`` turns metrics on as ``--metrics_enable`` / ``--metrics_list`` do."""
        monitoring = self.manager.monitoring
        if monitoring.get("enable"):
            if not self.config.rest_port:
                raise ConfigError("config.json monitoring.metrics.enable needs --rest_port "
                                  "(metrics are served over REST)")
            self.config.metrics_enable = True
        names = monitoring.get("metrics_list")
        if names and not self.config.metrics_list:
            for name in names:
                if name not in DEFAULT_METRICS + OPTIONAL_METRICS:
                    raise ConfigError(f"config.json monitoring.metrics.metrics_list: unknown metric {name!r}")
            self.plane.metrics.enabled = set(names)

    def run(self) -> None:
        """Load the models, serve until a signal, then shut down gracefully."""
        target = {"filename": self.config.log_path} if self.config.log_path else {"stream": sys.stderr}
        logging.basicConfig(level=_LEVELS[self.config.log_level], format="[%(asctime)s][%(levelname)s] %(message)s",
                            **target)
        self.manager.start()
        try:
            asyncio.run(self._serve())
        finally:
            if self.grpc is not None:
                self.grpc.stop(grace=5.0)
            self.manager.stop()
            log.info("vinerun serve: stopped")

    async def _serve(self) -> None:
        import uvicorn

        from vinerun.serving.rest import create_app

        _UvicornServer = _uvicorn_server_class()  # noqa: N806 - a class

        self.plane.started = True
        self._apply_monitoring()
        if self.config.port:
            from vinerun.serving.grpc.server import start_grpc_server

            self.grpc = start_grpc_server(self.plane, self.config.grpc_bind_address, self.config.port,
                                          self.config.grpc_workers)
        if not self.config.rest_port:
            print(self.describe(), flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()
            return
        sockets = _sockets(self.config.rest_bind_address, self.config.rest_port)
        self.rest_ports = [s.getsockname()[1] for s in sockets]
        app = create_app(self.plane, self.config.max_request_bytes, self.config.metrics_enable)
        uv = _UvicornServer(uvicorn.Config(app, log_level=self.config.log_level.lower().replace("trace", "debug"),
                                           access_log=self.config.log_level in ("TRACE", "DEBUG"),
                                           timeout_graceful_shutdown=30, lifespan="off"))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, uv.request_exit)
        print(self.describe(), flush=True)
        await uv.serve(sockets=sockets)
