"""Export -> import is bit-identical for every model of the GNA tests: float mode and GNA_SW_EXACT, input scale
factors given per input name, by the legacy index keys or not at all, i16 and i8 weights, stateful models
(state over several frames, query_state, reset_state). The blob carries the compile record
(vinerun/plugins/gna/blob_record.py); the importing Core's own GNA properties do not change an imported model."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import pytest

import vinerun as ov
from tests.unit.gna import test_cells, test_exact_graph, test_gna_device, test_limits
from vinerun import opset13 as ops
from vinerun.errors import BlobError
from vinerun.models.speech import MEMORY_LAYERS, memory_layer_model, speech_model
from vinerun.plugins.gna.blob_record import RT_KEY, CompileRecord, detach
from vinerun.plugins.gna.plugin import GNAPlugin
from vinerun.properties.intel_gna import ExecutionMode
from vinerun.runtime.blob import read_blob

FP32 = {"GNA_DEVICE_MODE": "GNA_SW_FP32"}
EYE = np.eye(8, dtype=np.float32)


def add_of_two_affines() -> ov.Model:
    """test_exact_graph's recurrent-Add model: the bias side is requantized (an affine override)."""
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 16], name="x")
    w1, w2 = (ops.constant(rng.standard_normal((16, 16)).astype(np.float32) * 0.01) for _ in range(2))
    return ov.Model([ops.add(ops.matmul(x, w1, False, False), ops.matmul(x, w2, False, False))], [x], "add2")


def concat_requantized() -> ov.Model:
    x = ops.parameter([1, 8], name="x")
    sig = ops.sigmoid(ops.matmul(x, ops.constant(EYE), False, False), name="sig")
    return ov.Model([ops.concat([sig, test_exact_graph.relu_of(x, "r")], 1)], [x], "cat")


def concat_of_inputs() -> ov.Model:
    x0, x1 = ops.parameter([1, 8], name="x0"), ops.parameter([1, 8], name="x1")
    return ov.Model([ops.concat([x0, x1], 1)], [x0, x1], "cat_inputs")


def folded_weights() -> ov.Model:
    x = ops.parameter([1, 8], name="x")
    w = ops.reshape(ops.convert(ops.constant(EYE.astype(np.float16)), "f32"), ops.constant(np.array([8, 8])), False)
    return ov.Model([ops.matmul(x, w, False, False)], [x], "folded")


def tanh_model() -> ov.Model:
    x = ops.parameter([1, 16], name="x")
    w = ops.constant((np.random.default_rng(2).standard_normal((16, 8)) * 0.5).astype(np.float32))
    return ov.Model([ops.tanh(ops.matmul(x, w, False, False))], [x], "tanh")


def diag_model() -> ov.Model:
    x = ops.parameter([1, 8], name="x")
    return ov.Model([ops.matmul(x, ops.constant(EYE * 0.5), False, False)], [x], "diag")


#: name -> (builder, runs in GNA_SW_EXACT); the models of tests/unit/gna and the memory layers
MODELS: dict[str, tuple[Callable[[], ov.Model], bool]] = {
    "device_speech": (test_gna_device.speech_model, True),
    "fc": (test_gna_device.fc_model, True),
    "fc_batch4": (lambda: test_gna_device.fc_model(4), True),
    "diag": (diag_model, True),
    "tanh": (tanh_model, True),
    "memory_relu": (test_exact_graph.memory_model, True),
    "add": (lambda: test_exact_graph.two_input_model("add"), True),
    "sub": (lambda: test_exact_graph.two_input_model("sub"), True),
    "mul": (lambda: test_exact_graph.two_input_model("mul"), True),
    "add_of_two_affines": (add_of_two_affines, True),
    "concat_requantized": (concat_requantized, True),
    "concat_of_inputs": (concat_of_inputs, True),
    "folded_weights": (folded_weights, True),
    "speech_40": (lambda: speech_model(features=40, hidden=64, outputs=32), True),
    "speech_440": (lambda: speech_model(features=440, hidden=64, outputs=32), True),
    "speech_lstm": (lambda: speech_model(features=40, hidden=32, outputs=16, lstm=8), True),
    "lstm_cell": (test_cells.cell_model, True),
    "lstm_cell_clip": (lambda: test_cells.cell_model(clip=0.5), True),
    "lstm_sequence": (test_cells.sequence_model, True),
    "gru": (test_cells.gru_model, True),
    "gru_lbr": (lambda: test_cells.gru_model(lbr=True), True),
    "gru_clip": (lambda: test_cells.gru_model(clip=0.7), True),
    "limits_fc8": (lambda: test_limits.fc(8), True),
    "limits_concat": (lambda: test_limits.concat(1), True),
    "limits_eltwise": (lambda: test_limits.eltwise([1, 8]), True),
    "limits_relu_chain": (lambda: test_limits.relu_chain(3), True),
    "limits_lstm": (lambda: test_limits.cell("lstm", 1), False),   # constant h, c: not exact yet
    "limits_gru": (lambda: test_limits.cell("gru", 1), False),
    "limits_state": (lambda: test_limits.state(1), True),
    "limits_conv1d": (test_limits.conv1d, False),
    "limits_split": (lambda: test_limits.split(1), False),
    "limits_transpose": (lambda: test_limits.inner_transpose(8, 64), False),
    **{f"memory_{kind}": (lambda kind=kind: memory_layer_model(kind), True) for kind in MEMORY_LAYERS},
}
EXACT = [name for name, (_, exact) in MODELS.items() if exact]


def frames_for(model: ov.Model, n: int = 6, seed: int = 4) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    shapes = [list(p.get_partial_shape().to_shape()) for p in model.get_parameters()]
    return [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(n)]


def scale_configs(model: ov.Model, frames: list[list[np.ndarray]]) -> dict[str, dict]:
    """The ways to give the inputs' scale factor (one for all inputs: concat_of_inputs needs them equal)."""
    sf = float(16384 / max(np.abs(x).max() for f in frames for x in f))
    names = [p.friendly_name for p in model.get_parameters()]
    return {"none": {},
            "per_input": {"GNA_SCALE_FACTOR_PER_INPUT": {n: sf for n in names}},
            "legacy_index": {f"GNA_SCALE_FACTOR_{i}": sf for i in range(len(names))},
            "legacy_i8": {"GNA_SCALE_FACTOR": sf, "GNA_PRECISION": "I8"} if len(names) == 1 else
                         {**{f"GNA_SCALE_FACTOR_{i}": sf for i in range(len(names))}, "GNA_PRECISION": "I8"},
            "per_input_i8": {"GNA_SCALE_FACTOR_PER_INPUT": {n: sf for n in names}, "INFERENCE_PRECISION_HINT": "i8"},
            "pwl_uniform": {"GNA_SCALE_FACTOR_PER_INPUT": {n: sf for n in names}, "GNA_PWL_UNIFORM_DESIGN": "YES",
                            "GNA_HW_EXECUTION_TARGET": "GNA_TARGET_2_0"}}


def other_core() -> ov.Core:
    """A Core whose own GNA properties would change compilation if an imported model took them."""
    core = ov.Core()
    core.set_property("GNA", {"INFERENCE_PRECISION_HINT": "i8", "GNA_PWL_MAX_ERROR_PERCENT": 0.3,
                              "GNA_SCALE_FACTOR_0": 3.0, "GNA_PWL_DESIGN_ALGORITHM": "UNIFORM_DISTRIBUTION"})
    return core


def outputs(request: ov.InferRequest, frames: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    out = []
    for f in frames:
        request.infer(f)
        out.append([np.array(request.get_output_tensor(i).data, copy=True) for i in range(len(request.model_outputs))])
    return out


def assert_same_run(compiled: ov.CompiledModel, imported: ov.CompiledModel, frames: list[list[np.ndarray]]) -> None:
    """Frame by frame, state after the frames, and after reset_state: bit for bit (np.array_equal)."""
    a, b = compiled.create_infer_request(), imported.create_infer_request()
    first_a, first_b = outputs(a, frames), outputs(b, frames)
    for fa, fb in zip(first_a, first_b, strict=True):
        for oa, ob in zip(fa, fb, strict=True):
            assert np.array_equal(oa, ob), f"max difference {np.abs(oa - ob).max()}"
    states_a = {s.name: np.array(s.state.data) for s in a.query_state()}
    states_b = {s.name: np.array(s.state.data) for s in b.query_state()}
    assert states_a.keys() == states_b.keys()
    for name in states_a:
        assert np.array_equal(states_a[name], states_b[name]), name
    a.reset_state()
    b.reset_state()
    again_a, again_b = outputs(a, frames[:3]), outputs(b, frames[:3])
    for fa, fb, f0 in zip(again_a, again_b, first_a[:3], strict=True):
        for oa, ob, o0 in zip(fa, fb, f0, strict=True):
            assert np.array_equal(oa, ob) and np.array_equal(oa, o0)


@pytest.mark.parametrize("how", ["none", "per_input", "legacy_index", "legacy_i8", "per_input_i8", "pwl_uniform"])
@pytest.mark.parametrize("name", EXACT)
def test_exact_model_imports_bit_identical(name: str, how: str) -> None:
    model = MODELS[name][0]()
    frames = frames_for(model)
    compiled = ov.Core().compile_model(model, "GNA", scale_configs(model, frames)[how])
    blob = compiled.export_model()
    imported = other_core().import_model(blob, "GNA")
    assert imported.get_property("INFERENCE_PRECISION_HINT") == compiled.get_property("INFERENCE_PRECISION_HINT")
    assert imported.get_property("GNA_PWL_MAX_ERROR_PERCENT") == compiled.get_property("GNA_PWL_MAX_ERROR_PERCENT")
    assert_same_run(compiled, imported, frames)
    # and once more: a blob exported from the imported model
    assert_same_run(compiled, ov.Core().import_model(imported.export_model(), "GNA"), frames)


@pytest.mark.parametrize("name", list(MODELS))
def test_float_model_imports_bit_identical(name: str) -> None:
    model = MODELS[name][0]()
    frames = frames_for(model)
    compiled = ov.Core().compile_model(model, "GNA", FP32)
    imported = other_core().import_model(compiled.export_model(), "GNA")
    assert imported.get_property("GNA_DEVICE_MODE") == ExecutionMode.SW_FP32
    assert_same_run(compiled, imported, frames)


@pytest.mark.parametrize("target", ["GNA_TARGET_2_0", "GNA_TARGET_3_0", "GNA_TARGET_3_5"])
def test_stateful_speech_model_on_every_target(target: str) -> None:
    model = speech_model(features=40, hidden=32, outputs=16, lstm=8)
    frames = frames_for(model, 12)
    config = {"GNA_HW_EXECUTION_TARGET": target, "GNA_SCALE_FACTOR_0": 16384 / 4.0, "GNA_PRECISION": "I8"}
    compiled = ov.Core().compile_model(model, "GNA", config)
    assert_same_run(compiled, ov.Core().import_model(compiled.export_model(), "GNA"), frames)


def test_the_blob_carries_the_compile_record() -> None:
    model = memory_layer_model("concat")
    compiled = ov.Core().compile_model(model, "GNA", {"GNA_SCALE_FACTOR_0": 1000.0, "GNA_PRECISION": "I8"})
    graph = read_blob(compiled.export_model().getvalue(), "GNA").model()
    record = detach(graph)
    assert RT_KEY not in graph.rt_info
    assert record is not None
    assert record.input_scales == [1000.0]
    assert record.config["GNA_SCALE_FACTOR_0"] == 1000.0            # a legacy key, not in the blob header's config
    assert record.config["INFERENCE_PRECISION_HINT"] == "i8"
    assert record.config["GNA_PWL_MAX_ERROR_PERCENT"] == 1.0        # defaults too
    assert record.state_scales == {"m": 1000.0}                     # the splice's (the input's) scale
    backend = compiled._impl.exact()
    assert record.overrides == backend.overrides and record.fingerprint == backend.fingerprint()


def test_scale_factors_given_at_import_are_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # as the Intel plugin did for blobs of version >= 2.8: the blob was quantized with its own scale factors
    model = test_gna_device.speech_model()
    frames = frames_for(model)
    compiled = ov.Core().compile_model(model, "GNA", {"GNA_SCALE_FACTOR_PER_INPUT": {"feats": 2048.0}})
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        imported = ov.Core().import_model(compiled.export_model(), "GNA",
                                          {"GNA_SCALE_FACTOR_PER_INPUT": {"feats": 10.0}})
    assert "GNA_SCALE_FACTOR_PER_INPUT={'feats': 10.0} is ignored for an imported model" in caplog.text
    assert imported.get_property("GNA_SCALE_FACTOR_PER_INPUT") == {"feats": 2048.0}
    assert_same_run(compiled, imported, frames)


def test_runtime_keys_still_apply_at_import() -> None:
    model = test_gna_device.speech_model()
    frames = frames_for(model)
    compiled = ov.Core().compile_model(model, "GNA", {"GNA_SCALE_FACTOR_0": 2048.0})
    blob = compiled.export_model()
    as_float = ov.Core().import_model(blob, "GNA", FP32)               # an import call's mode is taken
    assert as_float.get_property("GNA_DEVICE_MODE") == ExecutionMode.SW_FP32
    assert_same_run(ov.Core().compile_model(model, "GNA", FP32), as_float, frames)
    core = ov.Core()
    core.set_property("GNA", FP32)                                     # the importing Core's own is not
    assert core.import_model(blob, "GNA").get_property("GNA_DEVICE_MODE") == ExecutionMode.SW_EXACT
    # the mode the compiled model runs in when exported is the blob's
    compiled.set_property(FP32)
    assert_same_run(compiled, ov.Core().import_model(compiled.export_model(), "GNA"), frames)


def test_cache_dir_load_is_bit_identical(tmp_path: object) -> None:
    model = speech_model(features=40, hidden=32, outputs=16, lstm=8)
    frames = frames_for(model)
    config = {"CACHE_DIR": str(tmp_path), "GNA_SCALE_FACTOR_0": 4096.0, "GNA_PRECISION": "I8"}
    first = ov.Core().compile_model(model, "GNA", config)
    second = ov.Core().compile_model(model, "GNA", config)
    assert (first.get_property("LOADED_FROM_CACHE"), second.get_property("LOADED_FROM_CACHE")) == (False, True)
    assert_same_run(first, second, frames)


def test_a_record_that_does_not_reproduce_fails_loudly() -> None:
    compiled = ov.Core().compile_model(test_gna_device.speech_model(), "GNA", {"GNA_SCALE_FACTOR_0": 2048.0})
    graph = read_blob(compiled.export_model().getvalue(), "GNA").model()
    record = CompileRecord.from_text(str(graph.rt_info.get(RT_KEY)))   # get: the plain stored value
    tampered = CompileRecord(record.config, [1024.0], record.overrides, record.state_scales, record.output_scales,
                             record.fingerprint)
    graph.rt_info[RT_KEY] = tampered.to_text()
    with pytest.raises(BlobError, match="does not reproduce the exported one"):
        GNAPlugin().import_model(graph, {})
    graph.rt_info[RT_KEY] = "{not json"
    with pytest.raises(BlobError, match="compile record cannot be read"):
        GNAPlugin().import_model(graph, {})


def test_silero_tail_imports_bit_identical() -> None:
    silero_vad = pytest.importorskip("silero_vad")
    from pathlib import Path

    from vinerun.models.speech import silero_vad_tail

    path = Path(silero_vad.__file__).parent / "data" / "silero_vad_openvino_16k.onnx"
    if not path.exists():
        pytest.skip(f"{path} is not installed")
    model = silero_vad_tail(ov.Core().read_model(path))
    frames = [[f[0] * 0.5] for f in frames_for(model, 5)]
    for config in ({"GNA_SCALE_FACTOR_0": 4096.0}, {"GNA_SCALE_FACTOR_0": 4096.0, "GNA_PRECISION": "I8"}, FP32):
        compiled = ov.Core().compile_model(model, "GNA", config)
        assert_same_run(compiled, other_core().import_model(compiled.export_model(), "GNA"), frames)
