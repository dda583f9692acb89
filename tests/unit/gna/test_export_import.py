"""Export on one GNA target and import: the same outputs bit for bit, and the compatibility table
(specs/gna.md §6) enforced with its message."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import vinerun as ov
from vinerun.errors import DeviceError
from vinerun.models.speech import speech_model
from vinerun.plugins.gna.compatibility import TABLE, compatibility
from vinerun.plugins.gna.config import target_name
from vinerun.properties.intel_gna import HWGeneration
from vinerun.runtime.blob import read_blob

TARGETS = [HWGeneration.GNA_2_0, HWGeneration.GNA_3_0, HWGeneration.GNA_3_5]
FRAMES = np.random.default_rng(5).standard_normal((4, 1, 40)).astype(np.float32)
MODEL = speech_model(features=40, hidden=32, outputs=16, lstm=8)


def scores(compiled: ov.CompiledModel) -> np.ndarray:
    request = compiled.create_infer_request()
    return np.array([np.asarray(request.infer([x])[0]) for x in FRAMES])


def compile_for(target: HWGeneration, precision: str = "i16") -> ov.CompiledModel:
    name = target_name(target)
    return ov.Core().compile_model(MODEL, "GNA", {"GNA_HW_COMPILE_TARGET": name, "GNA_HW_EXECUTION_TARGET": name,
                                                  "INFERENCE_PRECISION_HINT": precision,
                                                  "GNA_SCALE_FACTOR_PER_INPUT": {"feats": 4096.0}})


@pytest.mark.parametrize("precision", ["i16", "i8"])
@pytest.mark.parametrize("target", TARGETS, ids=target_name)
def test_export_import_same_outputs_bit_for_bit(target: HWGeneration, precision: str) -> None:
    compiled = compile_for(target, precision)
    blob = compiled.export_model()
    header = read_blob(blob.getvalue(), "GNA").header
    assert HWGeneration(header.config["GNA_HW_COMPILE_TARGET"]) == target   # the blob records its target
    assert header.config["GNA_SCALE_FACTOR_PER_INPUT"] == {"feats": 4096.0}
    imported = ov.Core().import_model(blob, "GNA")
    assert imported.get_property("GNA_HW_COMPILE_TARGET") == target
    assert imported.get_property("INFERENCE_PRECISION_HINT") == compiled.get_property("INFERENCE_PRECISION_HINT")
    np.testing.assert_array_equal(scores(imported), scores(compiled))


def test_the_table_is_the_spec_table() -> None:
    g20, g30, g35 = TARGETS
    assert [compatibility(c, g20) for c in TARGETS] == [
        "Supported", "Not supported (incompatible layers emulated on CPU)", "Not supported"]
    assert [compatibility(c, g30) for c in TARGETS] == ["Partially", "Supported", "Not supported"]
    assert [compatibility(c, g35) for c in TARGETS] == ["Partially", "Partially", "Supported"]
    assert len(TABLE) == 9


@pytest.mark.parametrize("execution", TARGETS, ids=target_name)
@pytest.mark.parametrize("compiled_for", TARGETS, ids=target_name)
def test_import_on_another_execution_target_follows_the_table(compiled_for: HWGeneration, execution: HWGeneration,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    compiled = compile_for(compiled_for)
    blob = compiled.export_model()
    cell = compatibility(compiled_for, execution)
    config = {"GNA_HW_EXECUTION_TARGET": target_name(execution)}
    if cell.startswith("Not supported"):
        message = (f"A model compiled for {target_name(compiled_for)} is not supported on {target_name(execution)} "
                   f"(GNA compatibility table: {cell})")
        with pytest.raises(DeviceError) as info:
            ov.Core().import_model(blob, "GNA", config)
        assert str(info.value) == message
        return
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        imported = ov.Core().import_model(blob, "GNA", config)
    assert ("partially supported" in caplog.text) == (cell == "Partially")
    assert imported.get_property("GNA_HW_EXECUTION_TARGET") == execution
    assert imported.get_property("GNA_HW_COMPILE_TARGET") == compiled_for
    np.testing.assert_array_equal(scores(imported), scores(compiled))   # it keeps the compile target's arithmetic
