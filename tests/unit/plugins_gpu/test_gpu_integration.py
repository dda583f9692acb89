"""The GPU with the rest of vinerun, on the stand-in: AUTO (GPU first, CPU helper while it compiles), MULTI,
HETERO (split by the GPU's query_model), BATCH and the Core's automatic batching, and the CLI tools."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import vinerun as ov
from tests.unit.plugins_gpu._models import F32, X, cpu_outputs, mlp, run_queue
from vinerun.errors import DeviceError
from vinerun.models.cnn import cnn_onnx
from vinerun.plugins.gpu import backend, batch_size
from vinerun.plugins.gpu import plugin as gpu_plugin
from vinerun.tools.cli import main


# --- AUTO ----------------------------------------------------------------------------------------------------
def test_auto_prefers_the_gpu(stand_in: backend.GpuDevice) -> None:
    core = ov.Core()
    compiled = core.compile_model(mlp(), "AUTO", {"ENABLE_STARTUP_FALLBACK": False})
    assert compiled._impl.devices == ["GPU", "CPU"]
    assert compiled.get_property("EXECUTION_DEVICES") == ["GPU"]


def test_auto_serves_on_cpu_while_the_gpu_compiles(stand_in: backend.GpuDevice,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    compile_on_gpu = gpu_plugin.GPUPlugin.compile_model

    def slow_compile(self: gpu_plugin.GPUPlugin, model: ov.Model, config: dict[str, Any]) -> Any:
        assert release.wait(60), "the test never let the GPU compile finish"
        return compile_on_gpu(self, model, config)

    monkeypatch.setattr(gpu_plugin.GPUPlugin, "compile_model", slow_compile)
    model = mlp()
    compiled = ov.Core().compile_model(model, "AUTO", F32)  # returns while the GPU compile waits
    assert compiled.get_property("EXECUTION_DEVICES") == ["(CPU)"]
    np.testing.assert_array_equal(compiled([X])[0], cpu_outputs(model, X))
    assert compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE") == {"CPU": 1}
    assert compiled.get_property("AUTO_OUTPUTS_FROM_HELPER") == 1
    release.set()
    assert compiled._impl.wait_for_target(60)
    assert compiled.get_property("EXECUTION_DEVICES") == ["GPU"]
    np.testing.assert_allclose(compiled([X])[0], cpu_outputs(model, X), rtol=1e-5, atol=1e-5)
    assert compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE") == {"CPU": 1, "GPU": 1}
    assert compiled.get_property("AUTO_OUTPUTS_FROM_HELPER") == 1


# --- MULTI and HETERO ----------------------------------------------------------------------------------------
def test_multi_gpu_cpu_runs_on_both_lists(stand_in: backend.GpuDevice) -> None:
    model = mlp()
    compiled = ov.Core().compile_model(model, "MULTI:GPU,CPU", F32)
    assert compiled.get_property("EXECUTION_DEVICES") == ["GPU", "CPU"]
    inputs = [X * (i + 1) for i in range(6)]
    for x, got in zip(inputs, run_queue(compiled, inputs), strict=True):
        np.testing.assert_allclose(got, cpu_outputs(model, x), rtol=1e-5, atol=1e-5)
    assert sum(compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE").values()) == len(inputs)


@pytest.fixture
def no_gpu_tanh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test-only: the GPU has no device kernel for Tanh (its NumPy reference would run on the host)."""
    has_kernel = gpu_plugin.has_device_kernel
    monkeypatch.setattr(gpu_plugin, "has_device_kernel",
                        lambda node, device: node.type_name != "Tanh" and has_kernel(node, device))


def test_hetero_leaves_what_the_gpu_refuses_to_cpu(stand_in: backend.GpuDevice, no_gpu_tanh: None) -> None:
    core = ov.Core()
    model = mlp()
    assert "t" not in core.query_model(model, "GPU") and "fc" in core.query_model(model, "GPU")
    placed = core.query_model(model, "HETERO:GPU,CPU")
    assert (placed["fc"], placed["t"], placed["act"]) == ("GPU", "CPU", "GPU")
    compiled = core.compile_model(model, "HETERO:GPU,CPU", F32)
    submodels = [(s.device, sorted(n.type_name for n in s.model.get_ordered_ops()
                                   if n.type_name not in ("Parameter", "Constant", "Result")))
                 for s in compiled._impl.split.submodels]
    assert submodels == [("GPU", ["MatMul"]), ("CPU", ["Tanh"]), ("GPU", ["Relu"])]
    np.testing.assert_allclose(compiled([X])[0], cpu_outputs(model, X), rtol=1e-5, atol=1e-5)


def test_auto_skips_the_gpu_for_a_model_it_cannot_run(stand_in: backend.GpuDevice, no_gpu_tanh: None) -> None:
    compiled = ov.Core().compile_model(mlp(), "AUTO")
    assert compiled._impl.devices == ["CPU"] and compiled.get_property("EXECUTION_DEVICES") == ["CPU"]


# --- BATCH and automatic batching ----------------------------------------------------------------------------
def test_batch_gpu_8_matches_unbatched(stand_in: backend.GpuDevice) -> None:
    model = mlp()
    core = ov.Core()
    compiled = core.compile_model(model, "BATCH:GPU(8)", {**F32, "AUTO_BATCH_TIMEOUT": 5000})
    assert compiled.get_property("AUTO_BATCH_SIZE") == 8
    assert list(compiled._impl.batched.inputs[0].get_shape()) == [8, 8]
    single = core.compile_model(model, "GPU", F32)
    inputs = [X * (i - 3.5) for i in range(8)]
    for x, got in zip(inputs, run_queue(compiled, inputs), strict=True):
        np.testing.assert_allclose(got, single([x])[0], rtol=1e-5, atol=1e-6)


THROUGHPUT = {"PERFORMANCE_HINT": "THROUGHPUT", "AUTO_BATCH_TIMEOUT": 5000, **F32}


@pytest.fixture
def optimal_batch_4(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in reports OPTIMAL_BATCH_SIZE 1 (the CPU gains nothing from batching); a real GPU more."""
    monkeypatch.setattr(batch_size, "optimal_batch_size", lambda model, device: 4)


def test_throughput_hint_batches_the_gpu_automatically(stand_in: backend.GpuDevice, optimal_batch_4: None) -> None:
    core = ov.Core()
    model = mlp()
    assert core.get_property("GPU", "OPTIMAL_BATCH_SIZE", {"MODEL_PTR": model}) == 4
    compiled = core.compile_model(model, "GPU", THROUGHPUT)
    assert compiled._impl.device_name == "BATCH" and compiled.get_property("AUTO_BATCH_SIZE") == 4
    assert compiled.get_property("EXECUTION_DEVICES") == ["GPU"]
    inputs = [X * (i + 1) for i in range(4)]
    for x, got in zip(inputs, run_queue(compiled, inputs), strict=True):
        np.testing.assert_allclose(got, cpu_outputs(model, x), rtol=1e-5, atol=1e-6)
    core.set_property("GPU", {"PERFORMANCE_HINT": "THROUGHPUT"})  # the hint set on the device counts too
    assert core.compile_model(model, "GPU", {"AUTO_BATCH_TIMEOUT": 50})._impl.device_name == "BATCH"


@pytest.mark.parametrize("case", ["latency", "not allowed", "not allowed by the Core", "exclusive requests",
                                  "dynamic batch", "optimal batch 1"])
def test_automatic_batching_stays_out(stand_in: backend.GpuDevice, monkeypatch: pytest.MonkeyPatch,
                                      case: str) -> None:
    core = ov.Core()
    model, config = mlp(), dict(THROUGHPUT)
    if case != "optimal batch 1":
        monkeypatch.setattr(batch_size, "optimal_batch_size", lambda model, device: 4)
    if case == "latency":
        config["PERFORMANCE_HINT"] = "LATENCY"
    elif case == "not allowed":
        config["ALLOW_AUTO_BATCHING"] = False
    elif case == "not allowed by the Core":
        core.set_property({"ALLOW_AUTO_BATCHING": False})
        assert core.get_property("ALLOW_AUTO_BATCHING") is False
    elif case == "exclusive requests":
        config["EXCLUSIVE_ASYNC_REQUESTS"] = True
    elif case == "dynamic batch":
        model = mlp(batch=-1)
    config.pop("AUTO_BATCH_TIMEOUT")
    compiled = core.compile_model(model, "GPU", config)
    assert compiled._impl.device_name == "GPU"
    np.testing.assert_allclose(compiled([X])[0], cpu_outputs(mlp(), X), rtol=1e-5, atol=1e-6)


def test_cpu_takes_allow_auto_batching_and_is_never_batched() -> None:
    core = ov.Core()
    assert core.get_property("ALLOW_AUTO_BATCHING") is True
    compiled = core.compile_model(mlp(), "CPU", {"PERFORMANCE_HINT": "THROUGHPUT", "ALLOW_AUTO_BATCHING": True})
    assert compiled._impl.device_name == "CPU"


# --- the CLI tools -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gpu_tools") / "cnn.onnx"
    onnx.save(cnn_onnx(image=16, width=8), str(path))
    return path


def test_devices_lists_the_gpu_with_its_properties(stand_in: backend.GpuDevice, capsys: pytest.CaptureFixture) -> None:
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "[ INFO ] GPU :" in out and "FULL_DEVICE_NAME : PyTorch CPU stand-in" in out
    assert "Mutable: INFERENCE_PRECISION_HINT : f16" in out
    assert main(["devices", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["GPU"]["OPTIMIZATION_CAPABILITIES"][:2] == ["FP32", "FP16"]


def test_without_a_gpu_the_tools_do_not_list_it(capsys: pytest.CaptureFixture, cnn: Path) -> None:
    if backend.has_gpu():
        pytest.skip("this machine has a GPU")
    assert main(["devices", "--json"]) == 0
    assert "GPU" not in json.loads(capsys.readouterr().out)
    with pytest.raises(DeviceError, match=r"GPU is not available.*Available devices: CPU"):
        ov.Core().compile_model(str(cnn), "GPU")
    assert main(["benchmark", "-m", str(cnn), "-d", "GPU", "-niter", "1"]) != 0
    assert "Available devices: CPU" in capsys.readouterr().err


def test_benchmark_runs_on_the_gpu(stand_in: backend.GpuDevice, capsys: pytest.CaptureFixture, cnn: Path) -> None:
    assert main(["benchmark", "-m", str(cnn), "-d", "GPU", "-niter", "4", "-nireq", "2"]) == 0
    out = capsys.readouterr().out
    assert "Count:" in out and "4 iterations" in out


def test_compiled_blob_imports_on_the_gpu_with_identical_outputs(stand_in: backend.GpuDevice, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture, cnn: Path) -> None:
    blob = tmp_path / "cnn_gpu.blob"
    assert main(["compile", "-m", str(cnn), "-d", "GPU", "-o", str(blob)]) == 0
    core = ov.Core()
    imported = core.import_model(blob.read_bytes(), "GPU")
    assert imported.get_property("EXECUTION_DEVICES") == ["GPU"]
    x = np.random.default_rng(0).random((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_array_equal(imported([x])[0], core.compile_model(str(cnn), "GPU")([x])[0])


def test_the_stand_in_is_entered_only_by_tests() -> None:
    """No product code turns the stand-in on: outside ``backend.stand_in()`` only hardware is listed."""
    package = Path(ov.__file__).parent
    users = [p.relative_to(package) for p in package.rglob("*.py")
             if "stand_in(" in p.read_text() and p.name != "backend.py"]
    assert users == []
    assert backend.devices() == list(backend._hardware())
    assert ("GPU" in ov.Core().available_devices) == backend.has_gpu()
