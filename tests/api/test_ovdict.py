"""``OVDict``: what ``infer`` returns, read-only, keyed by output port, index or tensor name.

Each test runs with ``ov = vinerun`` and with ``ov = openvino`` (the oracle, when installed).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest


def _split(ov, direct: bool):
    """A model with three outputs named out0..out2, run once; returns (result, its compiled model, model)."""
    ops = ov.opset13
    p = ops.parameter([1, 6], np.float32, name="x")
    split = ops.split(p, 1, 3)
    model = ov.Model([split.output(i) for i in range(3)], [p])
    for i in range(3):
        model.output(i).tensor.set_names({f"out{i}"})
    compiled = ov.Core().compile_model(model, "CPU")
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    result = compiled(x) if direct else compiled.create_infer_request().infer(x)
    return result, compiled, model


@pytest.mark.parametrize("direct", [True, False])
def test_keys_by_port_index_and_name(ov, direct):
    from importlib import import_module

    result, compiled, model = _split(ov, direct)
    assert isinstance(result, import_module(f"{ov.__name__}.utils.data_helpers").OVDict)
    assert isinstance(result, Mapping) and len(result) == 3
    assert list(result) == list(compiled.outputs) == list(result.keys())
    for i, port in enumerate(compiled.outputs):
        np.testing.assert_array_equal(result[port], [[2 * i, 2 * i + 1]])
        np.testing.assert_array_equal(result[i], result[port])
        np.testing.assert_array_equal(result[f"out{i}"], result[port])
    np.testing.assert_array_equal(result[-1], result[2])  # indices count from the end, as a list's
    if ov.__name__ == "vinerun":  # vinerun also takes the source model's port (openvino: ConstOutput keys only)
        np.testing.assert_array_equal(result[model.outputs[1]], result[1])
    assert [n for n in result.names()] == [{"out0"}, {"out1"}, {"out2"}]


def test_unknown_keys(ov):
    result, _, _ = _split(ov, False)
    with pytest.raises(KeyError, match="nope"):
        result["nope"]
    with pytest.raises(KeyError, match="7"):
        result[7]
    with pytest.raises(TypeError, match="Unknown key type: <class 'float'>"):
        result[2.0]


def test_read_only(ov):
    result, _, _ = _split(ov, False)
    with pytest.raises(TypeError, match="'OVDict' object does not support item assignment"):
        result["out0"] = 1


def test_values_items_to_tuple_and_to_dict(ov):
    result, compiled, _ = _split(ov, True)
    a, b, c = result.values()
    t = result.to_tuple()
    assert isinstance(t, tuple) and all(x is y for x, y in zip(t, (a, b, c), strict=True))
    assert [k for k, _ in result.items()] == list(compiled.outputs)
    plain = result.to_dict()
    assert type(plain) is dict and set(plain) == set(compiled.outputs)
    with pytest.raises(KeyError):
        plain[0]  # a plain dict is keyed by ports only
    assert type(dict(result)) is dict


def test_an_ovdict_feeds_another_model_by_position(ov):
    ops = ov.opset13
    result, _, _ = _split(ov, True)
    params = [ops.parameter([1, 2], np.float32) for _ in range(3)]
    total = ops.add(ops.add(params[0], params[1]), params[2])
    compiled = ov.Core().compile_model(ov.Model([total], params), "CPU")
    np.testing.assert_array_equal(compiled(result)[0], [[6, 9]])
