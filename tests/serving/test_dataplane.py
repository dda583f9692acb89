"""The data plane in process: drain before unload, waiting for a loading version, validation, metrics."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.serving.serving_utils import reference, save_cnn
from vinerun import models
from vinerun.runtime import Core
from vinerun.serving.config import ServerConfig
from vinerun.serving.dataplane import DataPlane, InferRequest
from vinerun.serving.errors import InvalidPrecision, ModelNotFound, ModelVersionNotFound, ModelVersionRetired
from vinerun.serving.model_manager import ModelManager
from vinerun.serving.tensors import VersionStatus

X = models.sample_inputs("cnn")["image"]


@pytest.fixture
def plane(tmp_path):
    save_cnn(tmp_path / "m" / "1", seed=0)
    save_cnn(tmp_path / "m" / "2", seed=1)
    cfg = ServerConfig.from_args(["--model_name", "m", "--model_path", str(tmp_path / "m"), "--rest_port", "1",
                                  "--model_version_policy", '{"all": {}}', "--file_system_poll_wait_seconds", "0",
                                  "--nireq", "2"])
    manager = ModelManager(Core(), cfg)
    plane = DataPlane(manager)
    manager.start()
    plane.started = True
    yield plane, tmp_path
    manager.stop()


def test_infer_default_and_specific_version(plane):
    plane, repo = plane
    for version, want in ((None, "2"), ("0", "2"), ("1", "1")):
        response = plane.infer(InferRequest("m", version, "id-7", {"image": X}))
        assert response.model_version == want and response.id == "id-7"
        expected = reference(repo / "m" / want / "model.onnx", {"image": X})[0]
        np.testing.assert_allclose(response.outputs["logits"], expected, rtol=1e-5, atol=1e-5)
    assert plane.ready() and plane.model_ready("m") and plane.model_metadata("m").versions == ["1", "2"]


def test_errors(plane):
    plane, _ = plane
    with pytest.raises(ModelNotFound):
        plane.infer(InferRequest("nope", None, None, {"image": X}))
    with pytest.raises(ModelVersionNotFound):
        plane.model_ready("m", "5")
    with pytest.raises(InvalidPrecision, match="input name: image"):
        plane.infer(InferRequest("m", None, None, {"image": X.astype(np.float64)}))
    text = plane.metrics.render().decode()
    assert 'ovms_requests_fail{api="KServe",interface="REST",method="ModelInfer",name="nope",version="0"} 1' in text


def test_unload_waits_for_requests_in_flight(plane):
    plane, _ = plane
    manager = plane.manager
    served = manager.acquire("m", "1")  # a request is in flight on version 1
    entry = manager.entry("m")
    unloader = threading.Thread(target=manager._unload, args=(entry, 1))
    unloader.start()
    unloader.join(0.3)
    assert unloader.is_alive() and served.state == "UNLOADING"  # still draining
    with pytest.raises(ModelVersionRetired):
        manager.acquire("m", "1")  # no new requests on a retiring version
    default = manager.acquire("m", None)
    default.leave()
    assert default.version == 2  # the default moves on
    served.leave()
    unloader.join()
    assert entry.status[1].state == "END" and 1 not in entry.versions


def test_request_waits_for_a_loading_version(plane):
    plane, _ = plane
    manager = plane.manager
    entry = manager.entry("m")
    with entry.cond:
        loading = entry.versions.pop(2)
        entry.status[2] = VersionStatus(2, "LOADING")
    got = []
    waiter = threading.Thread(target=lambda: got.append(manager.acquire("m", "2")))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and not got  # waiting, not failing
    with entry.cond:
        entry.versions[2] = loading
        entry.status[2] = VersionStatus(2, "AVAILABLE")
        entry.cond.notify_all()
    waiter.join()
    assert got[0] is loading
    got[0].leave()


def test_concurrent_requests_all_answered(plane):
    plane, _ = plane
    out = []
    threads = [threading.Thread(target=lambda: out.append(plane.infer(InferRequest("m", "1", None, {"image": X}))))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 6 and all(np.array_equal(o.outputs["logits"], out[0].outputs["logits"]) for o in out)


def test_async_requests_beyond_nireq_wait_for_a_free_request(plane):
    import asyncio

    plane, _ = plane
    served = plane.manager.acquire("m", "1")
    served.leave()
    assert len(served.queue) == 2  # --nireq 2

    async def many():
        return await asyncio.gather(*[plane.infer_async(InferRequest("m", "1", str(i), {"image": X}))
                                      for i in range(9)])

    out = asyncio.run(many())
    assert [o.id for o in out] == [str(i) for i in range(9)]
    assert all(np.array_equal(o.outputs["logits"], out[0].outputs["logits"]) for o in out)
    assert served.queue.slots.acquire(blocking=False) and served.queue.slots.acquire(blocking=False)  # all freed
    served.queue.slots.release()
    served.queue.slots.release()


def test_cache_dir_flag_reaches_the_core(tmp_path):
    from vinerun.serving.server import Server

    server = Server(ServerConfig.from_args(["--rest_port", "1", "--cache_dir", str(tmp_path)]))
    assert server.manager.core.get_property("CACHE_DIR") == str(tmp_path)
    assert "model 'demo'" not in server.describe()  # nothing loaded before run()
