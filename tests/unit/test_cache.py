"""CACHE_DIR: hits, keys, stale and corrupt blobs, read-only and full directories, LRU pruning."""

import errno
import logging
import os

import numpy as np
import onnx
import pytest

import vinerun as ov
from vinerun.errors import PropertyError
from vinerun.models.cnn import cnn_inputs, cnn_model, cnn_onnx
from vinerun.runtime import blob as blobfmt
from vinerun.runtime import cache as cachemod


def _blobs(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".blob")) if os.path.isdir(d) else []


@pytest.fixture()
def cache_dir(tmp_path):
    return str(tmp_path / "cache")


@pytest.fixture()
def onnx_path(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn_onnx(), str(path))
    return str(path)


def test_second_compile_of_a_model_is_a_cache_hit(cache_dir):
    core = ov.Core()
    core.set_property({"CACHE_DIR": cache_dir})
    first = core.compile_model(cnn_model(), "CPU")
    assert first.get_property("LOADED_FROM_CACHE") is False
    assert len(_blobs(cache_dir)) == 1
    second = ov.Core()  # a new Core, as in a new process
    second.set_property({"CACHE_DIR": cache_dir})
    hit = second.compile_model(cnn_model(), "CPU")
    assert hit.get_property("LOADED_FROM_CACHE") is True
    assert "LOADED_FROM_CACHE" in hit.get_property("SUPPORTED_PROPERTIES")
    x = cnn_inputs()["image"]
    assert np.array_equal(hit(x)[0], first(x)[0])
    assert [o.get_names() for o in hit.outputs] == [o.get_names() for o in first.outputs]


def test_a_rebuilt_unnamed_model_hits_and_keeps_its_own_generated_names(cache_dir):
    # Model() names unnamed inputs/outputs after their (generated, counter-numbered) node names, as
    # OpenVINO does; the key must ignore those numbers and the hit must report this build's names
    def build():
        x = ov.opset13.parameter([1, 2])
        return ov.Model(ov.opset13.relu(x), [x])

    core = ov.Core()
    core.set_property({"CACHE_DIR": cache_dir})
    first, second = build(), build()
    assert first.outputs[0].get_names() != second.outputs[0].get_names()
    core.compile_model(first, "CPU")
    hit = core.compile_model(second, "CPU")
    assert hit.get_property("LOADED_FROM_CACHE") is True
    assert hit.outputs[0].get_names() == second.outputs[0].get_names()
    assert hit.inputs[0].get_names() == second.inputs[0].get_names()
    assert hit(np.ones((1, 2), np.float32)).names() == (second.outputs[0].get_names(),)


def test_path_hit_does_not_read_the_model(cache_dir, onnx_path, monkeypatch):
    core = ov.Core()
    config = {"CACHE_DIR": cache_dir}
    ref = core.compile_model(onnx_path, "CPU", config)
    assert ref.get_property("LOADED_FROM_CACHE") is False

    def no_read(*args, **kwargs):
        raise AssertionError("read_model called on a cache hit")

    monkeypatch.setattr(core, "read_model", no_read)
    hit = core.compile_model(onnx_path, "CPU", config)
    assert hit.get_property("LOADED_FROM_CACHE") is True
    x = cnn_inputs()["image"]
    assert np.array_equal(hit(x)[0], ref(x)[0])
    header, _ = blobfmt.read_header(open(os.path.join(cache_dir, _blobs(cache_dir)[0]), "rb").read())
    assert header.source[0].path == os.path.realpath(onnx_path)
    assert header.source[0].size == os.path.getsize(onnx_path)


def test_edited_model_file_makes_the_blob_stale(cache_dir, onnx_path, caplog):
    core = ov.Core()
    config = {"CACHE_DIR": cache_dir}
    core.compile_model(onnx_path, "CPU", config)
    onnx.save(cnn_onnx(seed=7), onnx_path)  # other weights, same path
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        fresh = core.compile_model(onnx_path, "CPU", config)
    assert fresh.get_property("LOADED_FROM_CACHE") is False
    assert "stale" in caplog.text and "changed" in caplog.text
    x = cnn_inputs()["image"]
    expected = ov.Core().compile_model(onnx_path, "CPU")(x)[0]
    assert np.array_equal(fresh(x)[0], expected)
    assert core.compile_model(onnx_path, "CPU", config).get_property("LOADED_FROM_CACHE") is True
    assert len(_blobs(cache_dir)) == 1


def test_model_bytes_are_cached_by_content(cache_dir):
    data = cnn_onnx().SerializeToString()
    core = ov.Core()
    assert core.compile_model(data, "CPU", {"CACHE_DIR": cache_dir}).get_property("LOADED_FROM_CACHE") is False
    assert core.compile_model(data, "CPU", {"CACHE_DIR": cache_dir}).get_property("LOADED_FROM_CACHE") is True
    other = cnn_onnx(seed=3).SerializeToString()
    assert core.compile_model(other, "CPU", {"CACHE_DIR": cache_dir}).get_property("LOADED_FROM_CACHE") is False
    assert len(_blobs(cache_dir)) == 2


def test_options_that_change_compilation_change_the_key(cache_dir):
    core = ov.Core()
    core.set_property({"CACHE_DIR": cache_dir})
    core.compile_model(cnn_model(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    bf16 = core.compile_model(cnn_model(), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    assert bf16.get_property("LOADED_FROM_CACHE") is False
    assert len(_blobs(cache_dir)) == 2
    # a runtime-only option shares the entry, and the loaded model takes the new value
    tput = core.compile_model(cnn_model(), "CPU", {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "THROUGHPUT"})
    assert tput.get_property("LOADED_FROM_CACHE") is True
    assert str(tput.get_property("PERFORMANCE_HINT")).endswith("THROUGHPUT")
    assert len(_blobs(cache_dir)) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncate", "flip", "other_version"])
def test_damaged_blob_is_discarded_and_recompiled_with_a_warning(cache_dir, caplog, damage):
    core = ov.Core()
    core.set_property({"CACHE_DIR": cache_dir})
    ref = core.compile_model(cnn_model(), "CPU")
    path = os.path.join(cache_dir, _blobs(cache_dir)[0])
    data = bytearray(open(path, "rb").read())
    if damage == "garbage":
        data = bytearray(b"\x00garbage" * 10)
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[-50] ^= 0xFF
    else:
        data = data.replace(ov.__version__.encode(), b"9.9.9"[: len(ov.__version__)].ljust(len(ov.__version__), b"9"))
    open(path, "wb").write(data)
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        again = core.compile_model(cnn_model(), "CPU")
    assert again.get_property("LOADED_FROM_CACHE") is False
    assert "discarding" in caplog.text and path in caplog.text
    x = cnn_inputs()["image"]
    assert np.array_equal(again(x)[0], ref(x)[0])
    # the damaged blob was replaced by a good one
    assert core.compile_model(cnn_model(), "CPU").get_property("LOADED_FROM_CACHE") is True


def test_unwritable_cache_dir_never_breaks_compilation(cache_dir, caplog, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(cachemod.tempfile, "mkstemp", denied)
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        compiled = ov.Core().compile_model(cnn_model(), "CPU", {"CACHE_DIR": cache_dir})
    assert compiled.get_property("LOADED_FROM_CACHE") is False
    assert "cannot write" in caplog.text
    x = cnn_inputs()["image"]
    assert np.array_equal(compiled(x)[0], ov.Core().compile_model(cnn_model(), "CPU")(x)[0])


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_cache_dir_still_compiles(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        compiled = ov.Core().compile_model(cnn_model(), "CPU", {"CACHE_DIR": str(d)})
        assert compiled.get_property("LOADED_FROM_CACHE") is False
    finally:
        d.chmod(0o755)


def test_cache_dir_that_is_a_file_still_compiles(tmp_path, caplog):
    f = tmp_path / "not_a_dir"
    f.write_text("x")
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        compiled = ov.Core().compile_model(cnn_model(), "CPU", {"CACHE_DIR": str(f)})
    assert compiled.get_property("LOADED_FROM_CACHE") is False
    assert "cannot write" in caplog.text


def test_full_disk_evicts_old_entries_then_gives_up_quietly(cache_dir, caplog, monkeypatch):
    core = ov.Core()
    core.set_property({"CACHE_DIR": cache_dir})
    core.compile_model(cnn_model(seed=1), "CPU")
    assert len(_blobs(cache_dir)) == 1

    def full(self, path, chunks):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cachemod.ModelCache, "_write", full)
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        compiled = core.compile_model(cnn_model(seed=2), "CPU")
    assert compiled.get_property("LOADED_FROM_CACHE") is False
    assert "No space left" in caplog.text
    assert _blobs(cache_dir) == []  # the old entry was evicted to make room before giving up


def test_pruning_evicts_least_recently_used(cache_dir):
    core = ov.Core()
    models = [cnn_model(seed=s) for s in range(3)]
    core.set_property({"CACHE_DIR": cache_dir})
    core.compile_model(models[0], "CPU")
    size = os.path.getsize(os.path.join(cache_dir, _blobs(cache_dir)[0]))
    core.set_property({"CACHE_MAX_SIZE": int(size * 2.5)})  # room for two entries
    core.compile_model(models[1], "CPU")
    first, second = (os.path.join(cache_dir, b) for b in _blobs_by_age(cache_dir))
    os.utime(first, ns=(10**18, 10**18))  # entry 0 used last, entry 1 long ago
    os.utime(second, ns=(10**17, 10**17))
    core.compile_model(models[2], "CPU")
    left = _blobs(cache_dir)
    assert len(left) == 2 and os.path.basename(second) not in left
    assert core.compile_model(models[0], "CPU").get_property("LOADED_FROM_CACHE") is True
    assert core.compile_model(models[1], "CPU").get_property("LOADED_FROM_CACHE") is False


def _blobs_by_age(d):
    return sorted(_blobs(d), key=lambda b: os.stat(os.path.join(d, b)).st_mtime_ns)


def test_blob_larger_than_the_limit_is_not_stored(cache_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        c = ov.Core().compile_model(cnn_model(), "CPU", {"CACHE_DIR": cache_dir, "CACHE_MAX_SIZE": "1KB"})
    assert c.get_property("LOADED_FROM_CACHE") is False
    assert _blobs(cache_dir) == [] and "larger than CACHE_MAX_SIZE" in caplog.text


@pytest.mark.parametrize(("text", "size"), [(4096, 4096), ("512MB", 512 << 20), ("2 GiB", 2 << 30), ("0", 0)])
def test_size_limit_parsing(text, size):
    assert cachemod.parse_size(text) == size


def test_bad_size_limit_names_the_property(cache_dir):
    with pytest.raises(PropertyError, match="CACHE_MAX_SIZE"):
        ov.Core().compile_model(cnn_model(), "CPU", {"CACHE_DIR": cache_dir, "CACHE_MAX_SIZE": "lots"})


def test_size_limit_from_the_environment(cache_dir, monkeypatch):
    monkeypatch.setenv(cachemod.ENV_MAX_SIZE, "nonsense")
    with pytest.raises(PropertyError, match=cachemod.ENV_MAX_SIZE):
        ov.Core().compile_model(cnn_model(), "CPU", {"CACHE_DIR": cache_dir})
    monkeypatch.setenv(cachemod.ENV_MAX_SIZE, "1KB")
    ov.Core().compile_model(cnn_model(), "CPU", {"CACHE_DIR": cache_dir})
    assert _blobs(cache_dir) == []


def test_model_the_cache_cannot_store_still_compiles(cache_dir, caplog):
    from tests.unit.test_export_import import _label_encoder_onnx

    model = ov.Core().read_model(_label_encoder_onnx())
    for m in (model, _label_encoder_onnx()):  # as a Model (cannot be keyed) and as bytes (cannot be stored)
        with caplog.at_level(logging.WARNING, logger="vinerun"):
            compiled = ov.Core().compile_model(m, "CPU", {"CACHE_DIR": cache_dir})
        np.testing.assert_array_equal(compiled(np.array([2, 1, 5]))[0], [20, 10, -1])
        assert compiled.get_property("LOADED_FROM_CACHE") is False
    assert caplog.text.count("vinerun cache: model 'le' cannot be") == 2 and "LabelEncoder 'y'" in caplog.text
    assert _blobs(cache_dir) == []
