"""Helpers for the serving tests: model repositories built with vinerun's builders, and a real
``vinerun serve`` subprocess on free loopback ports."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

import vinerun as ov
from vinerun import models

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def save_cnn(folder: Path, seed: int = 0) -> Path:
    """The reference CNN (input ``image`` [1,3,32,32] -> ``logits`` [1,10]) as ``folder/model.onnx``, atomically."""
    tmp = folder.parent / f".tmp-{folder.name}"
    tmp.mkdir(parents=True, exist_ok=True)
    onnx.save(models.build_onnx("cnn", seed=seed), tmp / "model.onnx")
    os.replace(tmp, folder)
    return folder / "model.onnx"


def save_cnn_ir(folder: Path, seed: int = 0) -> Path:
    """The same CNN saved as OpenVINO IR (``model.xml`` + ``model.bin``) by vinerun's writer."""
    folder.mkdir(parents=True, exist_ok=True)
    ov.save_model(models.build("cnn", seed=seed), str(folder / "model.xml"))
    return folder / "model.xml"


def save_echo(folder: Path) -> Path:
    """A string model: ``text`` BYTES [2] -> ``echo`` (Identity)."""
    folder.mkdir(parents=True, exist_ok=True)
    graph = helper.make_graph([helper.make_node("Identity", ["text"], ["echo"])], "echo",
                              [helper.make_tensor_value_info("text", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("echo", TensorProto.STRING, [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "model.onnx")
    return folder / "model.onnx"


def reference(path: Path, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """In-process vinerun inference on the same file (the oracle for every client test)."""
    compiled = ov.Core().compile_model(str(path), "CPU")
    return [np.asarray(v) for v in compiled(inputs).to_tuple()]


class ServeProcess:
    """``vinerun serve ARGS`` on free ports of 127.0.0.1; ``stop()`` sends SIGTERM and waits. ``cli``: the module
    run as ``python -m`` (``tests.serving.gpu_stand_in_cli`` serves with the GPU stand-in)."""

    def __init__(self, args: list[str], grpc: bool = True, log_path: Path | None = None,
                 cli: str = "vinerun.tools.cli") -> None:
        self.rest_port = free_port()
        self.grpc_port = free_port() if grpc else 0
        cmd = [sys.executable, "-m", cli, "serve", "--rest_port", str(self.rest_port),
               "--rest_bind_address", "127.0.0.1", "--grpc_bind_address", "127.0.0.1", *args]
        if grpc:
            cmd += ["--port", str(self.grpc_port)]
        self.log_path = log_path
        self._log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.rest_port}"
        self.grpc_address = f"127.0.0.1:{self.grpc_port}"

    def wait_ready(self, timeout: float = 60.0, probe: str = "/v2/health/ready") -> ServeProcess:
        """Wait until ``probe`` answers 200 (``/v2/health/live`` for a server whose models may fail to load)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vinerun serve exited with {self.proc.returncode}: {self.log()}")
            try:
                with urllib.request.urlopen(self.url + probe, timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"vinerun serve not ready after {timeout} s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path else ""

    def get(self, path: str) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not subprocess.DEVNULL:
            self._log.close()
        return self.proc.returncode


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
