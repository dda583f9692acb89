"""``CompiledModel`` as OpenVINO's Python API has it: properties, runtime model, ports, export/import
through streams and bytes, release_memory. Each scenario runs on vinerun and on openvino (the oracle)."""

from __future__ import annotations

import io

import numpy as np
import pytest


def _concat(ov):
    ops = ov.opset13
    a = ops.parameter([1, 2], ov.Type.f32, name="a")
    b = ops.parameter([1, 2], ov.Type.f32, name="b")
    return ov.Model([ops.concat([a, b], 1)], [a, b], "concat_model")


def test_properties_and_runtime_model(ov):
    compiled = ov.Core().compile_model(_concat(ov), "CPU", {})
    assert compiled.get_property(ov.properties.model_name) == "concat_model"
    assert ov.properties.model_name in compiled.get_property(ov.properties.supported_properties)
    assert isinstance(compiled.get_runtime_model(), ov.Model)
    assert [p.get_node().friendly_name for p in compiled.inputs] == ["a", "b"]
    assert compiled.input("b").get_any_name() == "b" and compiled.output().get_element_type() == ov.Type.f32


def test_set_property_takes_pairs_like_core(ov):
    compiled = ov.Core().compile_model(_concat(ov), "CPU")
    with pytest.raises(RuntimeError):  # compiled models keep their configuration
        compiled.set_property(dict([ov.properties.hint.performance_mode(
            ov.properties.hint.PerformanceMode.THROUGHPUT)]))


def test_export_import_through_a_stream_and_bytes(ov):
    core = ov.Core()
    compiled = core.compile_model(_concat(ov), "CPU")
    x = np.array([[1, 2]], np.float32)
    stream = io.BytesIO()
    compiled.export_model(stream)
    for blob in (stream, stream.getvalue(), compiled.export_model()):
        again = core.import_model(blob, "CPU")
        np.testing.assert_array_equal(again([x, x])[0], [[1, 2, 1, 2]])


def test_release_memory_then_infer_again(ov):
    compiled = ov.Core().compile_model(_concat(ov), "CPU")
    request = compiled.create_infer_request()
    x = np.array([[3, 4]], np.float32)
    request.infer({0: x, 1: x})
    compiled.release_memory()
    np.testing.assert_array_equal(request.infer({0: x, 1: x})[0], [[3, 4, 3, 4]])


def test_wrong_input_keys_raise_as_openvino(ov):
    compiled = ov.Core().compile_model(_concat(ov), "CPU")
    x = np.zeros((1, 2), np.float32)
    with pytest.raises(RuntimeError, match="Check"):
        compiled.infer_new_request({"nope": x, "b": x})
    with pytest.raises(TypeError, match="Incompatible key type for input: 0.5"):
        compiled.infer_new_request({0.5: x, "b": x})
