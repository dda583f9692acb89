"""Older op versions still found in IR files (MaxPool-1, Gelu-2): read from openvino's IR, run on the CPU and
by the reference, written back for openvino; and built with vinerun's opset1 / opset2 builders."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun
from vinerun.ir.interpreter import run_reference

ov = pytest.importorskip("openvino")
o1 = pytest.importorskip("openvino.opset1")
o2 = pytest.importorskip("openvino.opset2")

X = np.random.default_rng(2).standard_normal((1, 2, 9, 9)).astype(np.float32)


def _cases():
    return {
        "max_pool_ceil": lambda p: o1.max_pool(p, [2, 2], [0, 0], [1, 1], [3, 3], "ceil"),
        "max_pool_same_upper": lambda p: o1.max_pool(p, [2, 2], [0, 0], [0, 0], [3, 3], auto_pad="same_upper"),
        "gelu": lambda p: o2.gelu(p),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_read_run_and_write_back(name, tmp_path):
    p = o1.parameter(list(X.shape), np.float32)
    node = _cases()[name](p)
    model = ov.Model([node], [p])
    ov.save_model(model, tmp_path / "old.xml", compress_to_fp16=False)
    want = ov.Core().compile_model(model, "CPU")(X)[0]

    ours = vinerun.Core().read_model(tmp_path / "old.xml")
    op = [n for n in ours.get_ordered_ops() if n.type_name == node.get_type_name()][0]
    assert op.version == node.get_type_info().version_id and op.get_output_size() == 1
    np.testing.assert_allclose(run_reference(ours, [X])[0], want, atol=1e-5)
    np.testing.assert_allclose(vinerun.Core().compile_model(ours, "CPU")(X)[0], want, atol=1e-5)

    vinerun.save_model(ours, tmp_path / "back.xml", compress_to_fp16=False)
    back = ov.Core().read_model(tmp_path / "back.xml")
    np.testing.assert_allclose(ov.Core().compile_model(back, "CPU")(X)[0], want, atol=1e-5)


def test_old_builders():
    p = vinerun.opset1.parameter([1, 1, 4, 4], np.float32)
    pool = vinerun.opset1.max_pool(p, [1, 1], [0, 0], [0, 0], [2, 2])
    assert pool.get_output_size() == 1 and list(pool.get_output_shape(0)) == [1, 1, 3, 3]
    assert "dilations" not in pool.get_attributes()
    gelu = vinerun.opset2.gelu(p)
    assert gelu.get_type_info().version_id == "opset2" and "approximation_mode" not in gelu.get_attributes()
    assert vinerun.opset8.max_pool(p, [1, 1], [1, 1], [0, 0], [0, 0], [2, 2]).get_output_size() == 2
