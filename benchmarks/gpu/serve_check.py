"""The model server on a device, as a client sees it: ``vinerun serve --target_device <device>`` on a small CNN,
a KServe v2 REST inference compared with the local CPU result, and bad requests answered 4xx.

    python benchmarks/gpu/serve_check.py --device GPU          # on the GPU machine
    python benchmarks/gpu/serve_check.py --device CPU          # anywhere
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

import vinerun as ov
from vinerun.models.cnn import cnn_inputs, cnn_model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _wait_ready(base: str, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/v2/models/cnn/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("server not ready in time")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="GPU", help="target device of the served model (default GPU)")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="vinerun_serve_"))
    ov.save_model(cnn_model(), str(folder / "cnn" / "1" / "model.xml"))
    x = cnn_inputs()["data"] if "data" in cnn_inputs() else next(iter(cnn_inputs().values()))
    expected = ov.Core().compile_model(cnn_model(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(x)[0]
    port = _free_port()
    cli = [sys.executable, "-c", "from vinerun.tools.cli import main; main()"]
    proc = subprocess.Popen([*cli, "serve", "--model_name", "cnn", "--model_path", str(folder / "cnn"),
                             "--target_device", args.device, "--rest_port", str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, proc)
        name = ov.Core().read_model(str(folder / "cnn" / "1" / "model.xml")).inputs[0].get_any_name()
        body = {"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}
        status, reply = _post(f"{base}/v2/models/cnn/infer", body)
        got = np.array(reply["outputs"][0]["data"], np.float32).reshape(expected.shape)
        err = float(np.abs(got - expected).max() / np.abs(expected).max())
        top1 = bool((got.argmax(-1) == expected.argmax(-1)).all())
        print(f"serve --target_device {args.device}: REST infer {status}, rel err vs CPU f32 {err:.2e}, top-1 {top1}")
        bad_shape = {"inputs": [{**body["inputs"][0], "shape": [1, 1], "data": [0.0]}]}
        bad_name = {"inputs": [{**body["inputs"][0], "name": "nope"}]}
        codes = [_post(f"{base}/v2/models/cnn/infer", b)[0] for b in (bad_shape, bad_name)]
        print(f"bad shape -> {codes[0]}, unknown input -> {codes[1]}")
        ok = status == 200 and err < 2**-6 and top1 and all(400 <= c < 500 for c in codes)
        print("SERVE CHECK", "PASSED" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    raise SystemExit(main())
