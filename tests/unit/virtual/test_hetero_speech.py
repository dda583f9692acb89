"""``HETERO:GNA,CPU`` on a speech model with one op GNA does not run (Softmax): two subgraphs whose
outputs equal the same split done by hand, the .dot files, profiling, state, tensors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.model import Model
from vinerun.models.speech import speech_model

FEATURES, OUTPUTS = 16, 8
FRAMES = np.random.default_rng(3).standard_normal((4, 1, FEATURES)).astype(np.float32)


def speech_with_softmax() -> Model:
    """The Kaldi-style speech model (affine + sigmoid/tanh/relu, a memory) with a Softmax on its scores."""
    base = speech_model(features=FEATURES, hidden=16, outputs=OUTPUTS)
    probs = ops.softmax(base.get_results()[0].input_value(0), 1, name="probs")
    probs.output(0).set_names({"probs"})
    return Model([probs], base.get_parameters(), "speech_sm", sinks=base.get_sinks())


def by_hand(core: ov.Core) -> list[np.ndarray]:
    """The GNA half (the speech model up to its scores) and the CPU half (Softmax), chained by hand."""
    gna = core.compile_model(speech_model(features=FEATURES, hidden=16, outputs=OUTPUTS), "GNA")
    scores = ops.parameter([1, OUTPUTS], name="scores")
    cpu = core.compile_model(Model([ops.softmax(scores, 1)], [scores], "softmax"), "CPU")
    gna_request, cpu_request = gna.create_infer_request(), cpu.create_infer_request()
    return [cpu_request.infer({"scores": gna_request.infer({"feats": f})[0]})[0].copy() for f in FRAMES]


def test_gna_cpu_split_equals_the_split_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    core = ov.Core()
    model = speech_with_softmax()
    assert core.query_model(model, "HETERO:GNA,CPU")["probs"] == "CPU"
    compiled = core.compile_model(model, "HETERO:GNA,CPU", {"HETERO_DUMP_GRAPH_DOT": True})
    assert compiled.get_property("HETERO_NUMBER_OF_SUBMODELS") == 2
    assert compiled.get_property("EXECUTION_DEVICES") == ["GNA", "CPU"]
    request = compiled.create_infer_request()
    got = [request.infer({"feats": f})["probs"].copy() for f in FRAMES]
    want = by_hand(core)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert not np.array_equal(got[0], got[1])  # the memory carries over between frames

    affinity = (tmp_path / "hetero_affinity_speech_sm.dot").read_text()
    subgraphs = (tmp_path / "hetero_subgraphs_speech_sm.dot").read_text()
    assert affinity.startswith('digraph "speech_sm"') and "probs\\nSoftmax\\nCPU" in affinity
    assert "subgraph0: GNA" in subgraphs and "subgraph1: CPU" in subgraphs and "cluster_2" not in subgraphs


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_dot_files_are_rendered_to_svg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU", {"HETERO_DUMP_GRAPH_DOT": True})
    assert (tmp_path / "hetero_subgraphs_speech_sm.svg").read_text().lstrip().startswith("<")


def test_openvino_environment_variable_writes_the_dot_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENVINO_HETERO_VISUALIZE", "1")
    ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU")
    assert sorted(p.name for p in tmp_path.glob("*.dot")) == ["hetero_affinity_speech_sm.dot",
                                                             "hetero_subgraphs_speech_sm.dot"]


def test_no_dot_files_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENVINO_HETERO_VISUALIZE", raising=False)
    ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU")
    assert not list(tmp_path.iterdir())


def test_state_tensors_and_profiling_come_from_the_submodels() -> None:
    core = ov.Core()
    compiled = core.compile_model(speech_with_softmax(), "HETERO:GNA,CPU", {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    request.set_tensor("feats", ov.Tensor(FRAMES[0]))
    request.infer()
    first = request.get_tensor("probs").data.copy()
    assert [s.name for s in request.query_state()] == ["h"]
    assert np.any(request.query_state()[0].state.data != 0)
    request.infer({"feats": FRAMES[0]})
    assert not np.array_equal(request.get_output_tensor(0).data, first)
    request.reset_state()
    request.infer({"feats": FRAMES[0]})
    np.testing.assert_array_equal(request.get_output_tensor(0).data, first)

    profile = request.get_profiling_info()
    cpu = [p for p in profile if p.node_name == "subgraph1: probs"]
    assert cpu and cpu[0].exec_type.startswith("CPU:")
    assert any(p.node_name.startswith("subgraph0: ") and p.exec_type.startswith("GNA:") for p in profile)


def test_cache_dir_caches_each_submodel(tmp_path: Path) -> None:
    config = {"CACHE_DIR": str(tmp_path / "cache")}
    first = ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU", config)
    second = ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU", config)
    blobs = sorted(p.name for p in (tmp_path / "cache").glob("*.blob"))
    assert len(blobs) == 2  # one per submodel (GNA, CPU); HETERO itself is not cached
    ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU", config)
    assert sorted(p.name for p in (tmp_path / "cache").glob("*.blob")) == blobs
    np.testing.assert_array_equal(second({"feats": FRAMES[0]})[0], first({"feats": FRAMES[0]})[0])


@pytest.mark.parametrize("given", ["plain", "device_properties"])
def test_export_import_keeps_each_devices_config(given: str) -> None:
    # the GNA half was compiled with a scale factor and a PWL error HETERO's own config does not hold, and
    # with GNA's defaults for the rest: the blob must carry them all, whatever the importing Core sets for GNA
    gna = {"GNA_SCALE_FACTOR_PER_INPUT": {"feats": 1500.0}, "GNA_PWL_MAX_ERROR_PERCENT": 0.3}
    config = gna if given == "plain" else {"DEVICE_PROPERTIES": {"GNA": gna}}
    compiled = ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU", config)
    importer = ov.Core()
    importer.set_property("GNA", {"GNA_DEVICE_MODE": "GNA_SW_FP32", "GNA_PWL_DESIGN_ALGORITHM": "UNIFORM_DISTRIBUTION"})
    imported = importer.import_model(compiled.export_model(), "HETERO:GNA,CPU")
    assert imported.get_property("EXECUTION_DEVICES") == ["GNA", "CPU"]
    first, again = compiled.create_infer_request(), imported.create_infer_request()
    for frame in FRAMES:
        np.testing.assert_array_equal(again.infer({"feats": frame})["probs"], first.infer({"feats": frame})["probs"])
    default = ov.Core().compile_model(speech_with_softmax(), "HETERO:GNA,CPU").create_infer_request()
    assert not np.array_equal(default.infer({"feats": FRAMES[0]})["probs"], compiled({"feats": FRAMES[0]})["probs"])
