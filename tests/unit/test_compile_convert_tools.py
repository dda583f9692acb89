"""`vinerun compile` (compile_tool) and `vinerun convert` (ovc): files that the runtime and openvino read back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import vinerun as ov
from vinerun.models.cnn import cnn_onnx
from vinerun.tools.cli import main

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tools") / "cnn.onnx"
    onnx.save(cnn_onnx(image=16, width=8), str(path))
    return path


def _image(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((1, 3, 16, 16)).astype(np.float32)


def _direct(path: Path, x: np.ndarray) -> np.ndarray:
    return ov.Core().compile_model(str(path), "CPU", F32)([x])[0]


def test_compile_writes_a_blob_that_imports_and_agrees(cnn, tmp_path, capsys):
    blob = tmp_path / "cnn.blob"
    assert main(["compile", "-m", str(cnn), "-d", "CPU", "-o", str(blob), "-c", _conf(tmp_path)]) == 0
    assert "cnn.blob" in capsys.readouterr().out
    compiled = ov.Core().import_model(blob.read_bytes(), "CPU")
    assert compiled.get_property("PERFORMANCE_HINT") == ov.properties.hint.PerformanceMode.THROUGHPUT
    x = _image()
    np.testing.assert_array_equal(compiled([x])[0], _direct(cnn, x))


def _conf(tmp_path: Path) -> str:
    conf = tmp_path / "cpu.conf"
    conf.write_text("# compile_tool's format\nPERFORMANCE_HINT THROUGHPUT\nINFERENCE_PRECISION_HINT f32\n")
    return str(conf)


def test_compile_with_u8_nhwc_input(cnn, tmp_path):
    blob = tmp_path / "u8.blob"
    argv = ["compile", "-m", str(cnn), "-d", "CPU", "-o", str(blob), "-ip", "u8", "-il", "NHWC", "-iml", "NCHW"]
    assert main(argv) == 0
    compiled = ov.Core().import_model(blob.read_bytes(), "CPU", F32)
    port = compiled.inputs[0]
    assert port.get_element_type() == ov.Type.u8 and list(port.get_shape()) == [1, 16, 16, 3]
    pixels = np.random.default_rng(1).integers(0, 255, (1, 16, 16, 3), dtype=np.uint8)
    want = _direct(cnn, pixels.transpose(0, 3, 1, 2).astype(np.float32))
    np.testing.assert_allclose(compiled([pixels])[0], want, rtol=1e-5, atol=1e-5)


def test_json_config_and_default_output_name(cnn, tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(cnn.read_bytes())
    conf = tmp_path / "c.json"
    conf.write_text('{"NUM_STREAMS": 1}')
    assert main(["compile", "-m", str(model), "-d", "CPU", "-c", str(conf)]) == 0
    assert ov.Core().import_model((tmp_path / "m.blob").read_bytes(), "CPU").get_property("NUM_STREAMS") == 1


@pytest.mark.parametrize(("extra", "message"), [
    (["-iop", "nope:u8"], "-iop: the model has no input or output named 'nope'"),
    (["-ip", "x8"], "-ip: unknown element type 'x8'"),
    (["-c", "/no/such.conf"], "-c: cannot read the config file /no/such.conf"),
    (["-shape", "[1,3]"], "Convolution"),  # the node the new shape breaks
])
def test_bad_flags_name_what_is_wrong(cnn, tmp_path, capsys, extra, message):
    assert main(["compile", "-m", str(cnn), "-d", "CPU", "-o", str(tmp_path / "x.blob"), *extra]) == 1
    assert message in capsys.readouterr().err


def test_config_line_without_value(cnn, tmp_path, capsys):
    conf = tmp_path / "bad.conf"
    conf.write_text("PERFORMANCE_HINT\n")
    assert main(["compile", "-m", str(cnn), "-d", "CPU", "-c", str(conf), "-o", str(tmp_path / "x.blob")]) == 1
    assert "line 1: expected 'KEY VALUE'" in capsys.readouterr().err


def test_benchmark_runs_a_blob(cnn, tmp_path, capsys):
    blob = tmp_path / "b.blob"
    assert main(["compile", "-m", str(cnn), "-d", "CPU", "-o", str(blob)]) == 0
    capsys.readouterr()
    assert main(["benchmark", "-m", str(blob), "-d", "CPU", "-niter", "4", "-api", "sync"]) == 0
    out = capsys.readouterr().out
    assert "Import model took" in out and "Skipping the step for compiled network" in out
    assert main(["benchmark", "-m", str(blob), "-d", "GNA", "-niter", "1"]) == 1
    assert "compiled for device CPU" in capsys.readouterr().err


def test_convert_writes_ir_that_openvino_reads(cnn, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["convert", str(cnn)]) == 0  # ./cnn.xml, f16 weights
    assert main(["convert", str(cnn), "--output_model", "f32/", "--compress_to_fp16", "False",
                 "--input", "image[2,3,16,16]"]) == 0
    f16, f32 = tmp_path / "cnn.xml", tmp_path / "f32" / "cnn.xml"
    assert f16.with_suffix(".bin").stat().st_size < f32.with_suffix(".bin").stat().st_size
    x = np.concatenate([_image(2), _image(3)])
    ours = ov.Core().compile_model(str(f32), "CPU", F32)([x])[0]
    np.testing.assert_allclose(ours[:1], _direct(cnn, x[:1]), rtol=1e-5, atol=1e-6)
    openvino = pytest.importorskip("openvino")
    theirs = openvino.Core().compile_model(str(f32), "CPU", F32)([x])[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    assert list(openvino.Core().read_model(str(f16)).inputs[0].get_partial_shape().to_shape()) == [1, 3, 16, 16]


def test_convert_bad_input_names_the_flag(cnn, tmp_path, capsys):
    assert main(["convert", str(cnn), "--output_model", str(tmp_path / "o.xml"), "--input", "nope[1]"]) == 1
    assert "--input: the model has no input named 'nope'" in capsys.readouterr().err
