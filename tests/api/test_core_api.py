"""``Core`` as OpenVINO's Python API has it: read_model inputs, CACHE_DIR creation, versions, plugin
unloading, extensions, remote contexts. Each scenario runs on vinerun and on openvino (the oracle)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest


def _relu_ir(ov, tmp_path: Path) -> tuple[Path, Path]:
    ops = ov.opset13
    data = ops.parameter([1, 3, 4, 4], ov.Type.f32, name="data")
    model = ov.Model([ops.relu(data)], [data], "relu")
    xml, bin_ = tmp_path / "relu.xml", tmp_path / "relu.bin"
    ov.serialize(model, str(xml), str(bin_))
    return xml, bin_


def test_read_model_takes_paths_text_bytes_streams_and_a_weights_tensor(ov, tmp_path):
    core = ov.Core()
    xml, bin_ = _relu_ir(ov, tmp_path)
    forms = [
        dict(model=xml), dict(model=str(xml), weights=bin_), dict(model=xml, weights=str(bin_)),
        dict(model=xml.read_bytes(), weights=bin_.read_bytes()),
        dict(model=io.BytesIO(xml.read_bytes()), weights=io.BytesIO(bin_.read_bytes())),
        dict(model=xml.read_text(), weights=ov.tensor_from_file(bin_)),
    ]
    for form in forms:
        assert isinstance(core.read_model(**form), ov.Model)


def test_read_model_refuses_other_objects_with_a_type_error(ov):
    with pytest.raises(TypeError, match="Provided python object type <class 'int'> isn't supported as 'model'"):
        ov.Core().read_model(model=3, weights=3)


def test_compile_model_takes_no_str_of_an_arbitrary_object(ov):
    class NotAPath:
        def __str__(self):
            return "not a path"

    with pytest.raises(RuntimeError, match="Path: 'not a path' does not exist. Please provide valid model's path"):
        ov.compile_model(NotAPath())


def test_compile_model_from_ir_in_memory(ov, tmp_path):
    xml, bin_ = _relu_ir(ov, tmp_path)
    compiled = ov.Core().compile_model(model=xml.read_text(), weights=bin_.read_bytes(), device_name="CPU")
    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(1, 3, 4, 4)
    np.testing.assert_array_equal(compiled([x])[0], np.maximum(x, 0))


def test_cache_dir_is_created_when_set_and_read_model_config_leaves_the_core_alone(ov, tmp_path):
    core = ov.Core()
    xml, bin_ = _relu_ir(ov, tmp_path)
    before = core.get_property("CACHE_DIR")
    core.read_model(xml, bin_, config={"CACHE_DIR": str(tmp_path / "read")})
    assert (tmp_path / "read").is_dir() and core.get_property("CACHE_DIR") == before
    core.set_property({"CACHE_DIR": str(tmp_path / "global" / "nested")})
    assert (tmp_path / "global" / "nested").is_dir()
    core.set_property("CPU", {ov.properties.cache_dir: str(tmp_path / "cpu")})
    assert (tmp_path / "cpu").is_dir()


def test_get_versions_has_openvino_fields(ov):
    version = ov.Core().get_versions("CPU")["CPU"]
    assert all(isinstance(getattr(version, f), int) for f in ("major", "minor", "patch"))
    assert isinstance(version.build_number, str) and isinstance(version.description, str)
    assert version.build_number.startswith(f"{version.major}.{version.minor}.{version.patch}")


def test_unload_plugin_drops_a_loaded_plugin_and_refuses_one_not_loaded(ov):
    core = ov.Core()
    core.get_versions("CPU")
    core.unload_plugin("CPU")
    with pytest.raises(RuntimeError, match='Device with "CPU" name is not registered'):
        core.unload_plugin("CPU")
    assert "CPU" in core.get_versions("CPU")  # loaded again on next use


def test_add_extension_takes_extension_objects(ov):
    class Empty(ov.Extension):
        pass

    core = ov.Core()
    core.add_extension(Empty())
    core.add_extension([Empty(), Empty()])


def test_cpu_has_no_remote_context(ov):
    with pytest.raises(RuntimeError, match="get_default_context is not supported by CPU plugin!"):
        ov.Core().get_default_context("CPU")


def test_query_model_names_each_op_and_the_device(ov):
    ops = ov.opset13
    data = ops.parameter([2, 2], ov.Type.f32, name="data")
    model = ov.Model([ops.relu(data)], [data], "m")
    result = ov.Core().query_model(model, "CPU")
    assert set(result) <= {op.friendly_name for op in model.get_ordered_ops()} and result
    assert set(result.values()) == {"CPU"}


def test_vinerun_refuses_cpp_libraries_clearly(tmp_path):
    import vinerun
    from vinerun.errors import NotSupportedError

    core = vinerun.Core()
    with pytest.raises(NotSupportedError, match="C\\+\\+ extension libraries"):
        core.add_extension("libcustom_ops.so")
    with pytest.raises(TypeError):
        core.add_extension(3)
    plugins = tmp_path / "plugins.xml"
    plugins.write_text('<ie><plugins><plugin name="MYDEV" location="libmy_plugin.so"/></plugins></ie>')
    core.register_plugins(str(plugins))
    with pytest.raises(NotSupportedError, match="Cannot load library 'libmy_plugin.so'"):
        core.get_versions("MYDEV")
    with pytest.raises(TypeError, match="No constructor defined!"):
        vinerun.RemoteTensor(np.ones(3))


def test_pack_and_unpack_sub_byte_values():
    from vinerun.helpers import pack_data, unpack_data
    from vinerun.ir import Type

    assert pack_data(np.array([7, 8]), Type.u4).tolist() == [120]
    values = np.array([-8, 7, -1, 3, 0], dtype=np.int8)
    assert np.array_equal(unpack_data(pack_data(values, Type.i4), Type.i4, [5]), values)
    bits = np.array([1, 0, 1, 1, 0, 0, 0, 1, 1])
    assert pack_data(bits, Type.u1).tolist() == [0b10110001, 0b10000000]
    assert np.array_equal(unpack_data(pack_data(bits, Type.u1), Type.u1, [9]), bits)


def test_a_core_wide_value_one_device_refuses_is_that_devices_error_when_used():
    import vinerun

    core = vinerun.Core()
    core.set_property({"INFERENCE_PRECISION_HINT": "f32", "PERF_COUNT": True})  # GNA computes in i16 / i8 only
    assert core.get_property("CPU", "INFERENCE_PRECISION_HINT") == vinerun.Type.f32
    with pytest.raises(RuntimeError, match="GNA refused INFERENCE_PRECISION_HINT set by Core.set_property"):
        core.get_property("GNA", "PERF_COUNT")
    core.set_property("GNA", {"INFERENCE_PRECISION_HINT": "i8"})  # a valid value clears the error
    assert core.get_property("GNA", "PERF_COUNT") is True  # the keys GNA accepted were kept
