"""Unmodified clients (tritonclient.grpc, the kserve SDK, ovmsclient) against a real server process.

The server is a ``vinerun serve --port N`` process. Each client session runs in its own interpreter: tritonclient.grpc
and the kserve SDK register the same ``inference.*`` protobuf symbols and cannot share a process.
"""

import importlib.util
import json
import socket
import subprocess
import sys
import time

import grpc
import numpy as np
import pytest

import vinerun as ov
from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb

from .test_grpc_service import write_repository  # noqa: TID252

X = [[-3.0, 0.5, 1.0, 2.0]]
WORDS = ["hello", "w\u00f6rld"]

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_command(config, port):
    return [sys.executable, "-m", "vinerun.tools.cli", "serve", "--config_path", str(config), "--port", str(port),
            "--grpc_bind_address", "127.0.0.1", "--file_system_poll_wait_seconds", "0"]


def _wait_ready(proc, port, log, timeout=120.0):
    ready = None
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        rpc = ch.unary_unary("/inference.GRPCInferenceService/ServerReady",
                             request_serializer=lambda m: m.SerializeToString(),
                             response_deserializer=pb.ServerReadyResponse.FromString)
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                ready = rpc(pb.ServerReadyRequest(), timeout=2).ready
            except grpc.RpcError:
                ready = False
            if ready:
                return
            time.sleep(0.2)
    proc.kill()
    proc.wait()
    pytest.fail(f"server did not become ready on port {port} (exit {proc.returncode}): {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    config = write_repository(tmp_path_factory.mktemp("models"))
    port = _free_port()
    log = config.parent / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(_server_command(config, port), stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        _wait_ready(proc, port, log)
        yield config, port
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def expected(served):
    config, _ = served
    compiled = ov.Core().compile_model(str(config.parent / "num" / "1" / "model.onnx"), "CPU")
    result = compiled({"x": np.array(X, np.float32)})
    return {port.get_any_name(): value for port, value in result.items()}


def _session(script, port, module):
    if importlib.util.find_spec(module) is None:  # find_spec, not import: the clients' protos collide
        pytest.skip(f"{module} is not installed")
    # leave without finalizers: tritonclient's InferenceServerClient.__del__ closes its grpc channel at
    # interpreter exit and can wait forever on a lock the stream's thread held (seen under load)
    script += "\nimport os\nsys.stdout.flush()\nos._exit(0)\n"
    argv = [sys.executable, "-c", script, str(port), json.dumps([X, WORDS])]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_TRITON = r"""
import json, sys
import numpy as np
import tritonclient.grpc as g
X, WORDS = json.loads(sys.argv[2])
from tritonclient.utils import InferenceServerException
c = g.InferenceServerClient(f"127.0.0.1:{sys.argv[1]}")
r = {"live": c.is_server_live(), "ready": c.is_server_ready(), "model_ready": c.is_model_ready("num"),
     "meta": c.get_model_metadata("num", as_json=True), "server": c.get_server_metadata(as_json=True)}
x = g.InferInput("x", [1, 4], "FP32")
x.set_data_from_numpy(np.array(X, np.float32))
res = c.infer("num", [x], outputs=[g.InferRequestedOutput("y"), g.InferRequestedOutput("z")])
r["y"], r["z"] = res.as_numpy("y").tolist(), res.as_numpy("z").tolist()
s = g.InferInput("s", [2], "BYTES")
s.set_data_from_numpy(np.array([w.encode() for w in WORDS], dtype=object))
r["o"] = [v.decode() for v in c.infer("str", [s]).as_numpy("o")]
bad = g.InferInput("x", [1, 3], "FP32")
bad.set_data_from_numpy(np.zeros((1, 3), np.float32))
r["errors"] = []
for model, inputs, version in (("num", [bad], ""), ("nope", [x], ""), ("num", [x], "5")):
    try:
        c.infer(model, inputs, model_version=version)
    except InferenceServerException as e:
        r["errors"].append([e.status(), e.message()])
r["after"] = c.infer("num", [x]).as_numpy("y").tolist()
import queue
answers = queue.Queue()
c.start_stream(callback=lambda result, error: answers.put((result, error)))
c.async_stream_infer("num", [x], request_id="s1")
c.async_stream_infer("num", [bad], request_id="s2")
got = [answers.get(timeout=60) for _ in range(2)]
c.stop_stream()
r["stream"] = [[res.as_numpy("y").tolist() if res else None, str(err) if err else None] for res, err in got]
print(json.dumps(r))
"""


def test_tritonclient_grpc_session(served, expected):
    r = _session(_TRITON, served[1], "tritonclient")
    assert r["live"] and r["ready"] and r["model_ready"]
    assert r["meta"]["name"] == "num" and r["meta"]["platform"] == "OpenVINO"
    assert [(t["name"], t["datatype"], t["shape"]) for t in r["meta"]["inputs"]] == [("x", "FP32", ["1", "4"])]
    assert r["server"]["version"] == ov.__version__
    np.testing.assert_array_equal(np.array(r["y"], np.float32), expected["y"])
    np.testing.assert_array_equal(np.array(r["z"], np.float32), expected["z"])
    assert r["o"] == WORDS
    codes = [e[0] for e in r["errors"]]
    assert codes == ["StatusCode.INVALID_ARGUMENT", "StatusCode.NOT_FOUND", "StatusCode.NOT_FOUND"], r["errors"]
    assert "Invalid input shape" in r["errors"][0][1] and "input name: x" in r["errors"][0][1]
    np.testing.assert_array_equal(np.array(r["after"], np.float32), expected["y"])
    (y, ok_error), (none, bad_error) = r["stream"]  # ModelStreamInfer: errors in-stream, the stream goes on
    np.testing.assert_array_equal(np.array(y, np.float32), expected["y"])
    assert ok_error is None and none is None and "Invalid input shape" in bad_error


_KSERVE = r"""
import asyncio, json, sys
import numpy as np
from kserve import InferenceGRPCClient, InferInput, InferRequest
X, WORDS = json.loads(sys.argv[2])
async def main():
    c = InferenceGRPCClient(f"127.0.0.1:{sys.argv[1]}")
    r = {"live": await c.is_server_live(), "ready": await c.is_server_ready(),
         "model_ready": await c.is_model_ready("num")}
    x = InferInput("x", [1, 4], "FP32")
    x.set_data_from_numpy(np.array(X, np.float32))
    res = await c.infer(InferRequest(model_name="num", infer_inputs=[x]))
    r.update({o.name: o.as_numpy().tolist() for o in res.outputs})
    s = InferInput("s", [2], "BYTES")
    s.set_data_from_numpy(np.array([w.encode() for w in WORDS], dtype=object))
    res = await c.infer(InferRequest(model_name="str", infer_inputs=[s]))
    r["o"] = [v.decode() if isinstance(v, bytes) else v for v in res.outputs[0].as_numpy().tolist()]
    try:
        await c.infer(InferRequest(model_name="nope", infer_inputs=[x]))
    except Exception as e:
        r["error"] = str(e)
    await c.close()
    print(json.dumps(r))
asyncio.run(main())
"""


def test_kserve_sdk_grpc_session(served, expected):
    r = _session(_KSERVE, served[1], "kserve")
    assert r["live"] and r["ready"] and r["model_ready"]
    np.testing.assert_array_equal(np.array(r["y"], np.float32), expected["y"])
    np.testing.assert_array_equal(np.array(r["z"], np.float32), expected["z"])
    assert r["o"] == WORDS
    assert "Model with requested name is not found" in r["error"]


_OVMS = r"""
import json, sys
import numpy as np
import ovmsclient
X, WORDS = json.loads(sys.argv[2])
c = ovmsclient.make_grpc_client(f"127.0.0.1:{sys.argv[1]}")
r = {"status": {str(k): v for k, v in c.get_model_status("num").items()}, "meta": c.get_model_metadata("num")}
out = c.predict({"x": np.array(X, np.float32)}, "num", model_version=0)
r["y"], r["z"] = out["y"].tolist(), out["z"].tolist()
r["v1"] = c.predict({"x": np.array(X, np.float32)}, "num", model_version=1)["y"].tolist()
r["o"] = [v.decode() for v in c.predict({"s": [w.encode() for w in WORDS]}, "str").tolist()]
r["errors"] = []
for inputs, model in (({"x": np.zeros((1, 3), np.float32)}, "num"), ({"x": np.array(X, np.float32)}, "nope")):
    try:
        c.predict(inputs, model)
    except Exception as e:
        r["errors"].append([type(e).__name__, str(e)])
print(json.dumps(r))
"""


def test_ovmsclient_grpc_session(served, expected):
    r = _session(_OVMS, served[1], "ovmsclient")
    assert r["status"] == {"1": {"state": "AVAILABLE", "error_code": 0, "error_message": "OK"}}
    assert r["meta"]["model_version"] == 1
    assert r["meta"]["inputs"] == {"x": {"shape": [1, 4], "dtype": "DT_FLOAT"}}
    assert set(r["meta"]["outputs"]) == {"y", "z"}
    np.testing.assert_array_equal(np.array(r["y"], np.float32), expected["y"])
    np.testing.assert_array_equal(np.array(r["z"], np.float32), expected["z"])
    np.testing.assert_array_equal(np.array(r["v1"], np.float32), expected["y"])
    assert r["o"] == WORDS
    assert [e[0] for e in r["errors"]] == ["InvalidInputError", "ModelNotFoundError"], r["errors"]
    assert "Invalid input shape" in r["errors"][0][1]
