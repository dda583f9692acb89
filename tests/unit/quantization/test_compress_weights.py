"""vinerun.compress_weights: the decompression subgraphs NNCF writes, and their accuracy."""

import numpy as np
import pytest

import vinerun as ov
from vinerun.quantization import QuantizationError

RNG = np.random.default_rng(1)


def _mlp() -> ov.Model:
    rng = np.random.default_rng(1)
    ids = ov.opset1.parameter([1, 6], ov.Type.i64, name="ids")
    emb = ov.opset8.gather(rng.standard_normal((50, 64)).astype(np.float32), ids, np.int64(0), name="embed")
    h = ov.opset1.matmul(emb, rng.standard_normal((64, 128)).astype(np.float32) * 0.1, False, False, name="fc1")
    h = ov.opset1.relu(h)
    h = ov.opset1.matmul(h, rng.standard_normal((64, 128)).astype(np.float32) * 0.1, False, True, name="fc2")
    y = ov.opset1.matmul(h, rng.standard_normal((64, 16)).astype(np.float32) * 0.1, False, False, name="head")
    return ov.Model([y], [ids], "mlp")


def _chain(model: ov.Model, layer: str, port: int) -> list[str]:
    """Op types from the layer's weight input back to the constant (following input 0)."""
    node = [n for n in model.get_ordered_ops() if n.friendly_name == layer][0].input_value(port).node
    types = []
    while True:
        types.append(node.type_name if node.type_name != "Constant" else f"Constant:{node.get_element_type()}")
        if node.type_name == "Constant":
            return types
        node = node.input_value(0).node


def _run(model: ov.Model, ids: np.ndarray) -> np.ndarray:
    return ov.Core().compile_model(model, "CPU")({"ids": ids})[0]


@pytest.mark.parametrize("mode, first", [("int8_sym", "int8_t"), ("int8_asym", "uint8_t")])
def test_int8_patterns(mode, first):
    c = ov.compress_weights(_mlp(), mode=mode)
    chain = _chain(c, "fc1", 1)
    want = ["Convert", "Multiply", "Subtract", "Convert", f"Constant:<Type: '{first}'>"]
    if mode == "int8_sym":
        want.remove("Subtract")
    assert chain == want
    mul = [n for n in c.get_ordered_ops() if n.friendly_name.endswith("fq_weights_1") and n.type_name == "Multiply"]
    assert mul and mul[0].input_value(1).node.get_element_type() == ov.Type.f16
    assert _chain(c, "embed", 0)[-1] == f"Constant:<Type: '{first}'>"


@pytest.mark.parametrize("mode, first", [("int4_sym", "int4_t"), ("int4_asym", "uint4_t")])
def test_int4_group_pattern_keeps_embedding_and_last_layer_int8(mode, first):
    c = ov.compress_weights(_mlp(), mode=mode, group_size=16)
    chain = _chain(c, "fc1", 1)
    assert chain[:3] == ["Convert", "Reshape", "Multiply"] and chain[-1] == f"Constant:<Type: '{first}'>"
    codes = [n for n in c.get_ordered_ops()
             if n.type_name == "Constant" and str(n.get_element_type()) == f"<Type: '{first}'>"]
    shapes = sorted(tuple(n.get_output_shape(0)) for n in codes)
    assert (4, 16, 128) in shapes  # [K/g, g, N] for fc1's [K=64, N=128]
    assert (64, 8, 16) in shapes  # [N, K/g, g] for fc2's transposed [N=64, K=128]
    assert _chain(c, "head", 1)[-1] == "Constant:<Type: 'uint8_t'>"
    assert _chain(c, "embed", 0)[-1] == "Constant:<Type: 'uint8_t'>"


@pytest.mark.parametrize("mode, tol", [("int8_sym", 0.03), ("int8_asym", 0.03), ("int4_sym", 0.2), ("int4_asym", 0.2)])
def test_accuracy(mode, tol):
    model = _mlp()
    ids = np.random.default_rng(2).integers(0, 50, (1, 6))
    ref = _run(model, ids)
    got = _run(ov.compress_weights(model, mode=mode, group_size=None if "int8" in mode else 32), ids)
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()


def test_ratio_and_ignored_scope():
    c = ov.compress_weights(_mlp(), mode="int4_sym", group_size=16, ratio=0.5, all_layers=True)
    four = [n for n in c.get_ordered_ops() if n.type_name == "Constant" and n.get_element_type() == ov.Type.i4]
    assert 0 < len(four) < 4
    c = ov.compress_weights(_mlp(), mode="int8_sym", ignored_scope=ov.IgnoredScope(names=["fc2"]))
    assert _chain(c, "fc2", 1) == ["Constant:<Type: 'float32'>"]


def test_bad_arguments():
    with pytest.raises(QuantizationError, match="mode"):
        ov.compress_weights(_mlp(), mode="int3")
    with pytest.raises(QuantizationError, match="group_size"):
        ov.compress_weights(_mlp(), mode="int8_sym", group_size=32)
    with pytest.raises(QuantizationError, match="ratio"):
        ov.compress_weights(_mlp(), mode="int4_sym", ratio=2)
