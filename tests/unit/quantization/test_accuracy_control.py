"""vinerun.quantize_with_accuracy_control: quantizer groups, the revert, and the search."""

import numpy as np
import pytest

import vinerun as ov
from vinerun.ir.core_ops import Constant
from vinerun.quantization import accuracy_control
from vinerun.quantization.quantizer_groups import bias_values, find_quantizer_groups, revert_groups


def _model(rng: np.random.Generator) -> ov.Model:
    """x -> Conv+bias -> ReLU -> MaxPool -> Conv+bias -> Add(residual) -> ReLU -> AvgPool -> MatMul."""
    x = ov.opset1.parameter([1, 3, 8, 8], ov.Type.f32, name="x")
    c1 = ov.opset1.convolution(x, rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, [1, 1], [1, 1],
                               [1, 1], [1, 1], name="conv1")
    r1 = ov.opset1.relu(ov.opset1.add(c1, np.full((1, 8, 1, 1), 0.2, np.float32), name="bias1"), name="relu1")
    p1 = ov.opset1.max_pool(r1, [2, 2], [0, 0], [0, 0], [2, 2], name="pool1")
    c2 = ov.opset1.convolution(p1, rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.1, [1, 1], [1, 1],
                               [1, 1], [1, 1], name="conv2")
    b2 = ov.opset1.add(c2, np.full((1, 8, 1, 1), 0.1, np.float32), name="bias2")
    r2 = ov.opset1.relu(ov.opset1.add(b2, p1, name="residual"), name="relu2")
    g = ov.opset1.avg_pool(r2, [1, 1], [0, 0], [0, 0], [4, 4], True, name="gap")
    f = ov.opset1.reshape(g, np.array([1, 8], np.int64), False, name="flatten")
    y = ov.opset1.matmul(f, rng.standard_normal((8, 5)).astype(np.float32), False, False, name="fc")
    return ov.Model([y], [x], "small_cnn")


def _setup(seed: int = 0) -> tuple[ov.Model, ov.Dataset, ov.Dataset]:
    rng = np.random.default_rng(seed)
    model = _model(rng)
    calib = ov.Dataset([rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(16)])
    compiled = ov.Core().compile_model(model, "CPU")
    inputs = [rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(24)]
    items = [{"x": a, "ref": np.array(compiled(a)[0])} for a in inputs]
    return model, calib, ov.Dataset(items, lambda item: item["x"])


def _validate(compiled, items) -> float:
    """Minus the mean relative error of the outputs against the float model's (0 is a perfect match)."""
    request = compiled.create_infer_request()
    errors = []
    for item in items:
        request.infer(item["x"])
        ref = item["ref"]
        errors.append(np.abs(request.get_output_tensor(0).data - ref).mean() / np.abs(ref).mean())
    return -float(np.mean(errors))


def _fq_names(model: ov.Model) -> set[str]:
    return {n.friendly_name for n in model.get_ordered_ops() if n.type_name == "FakeQuantize"}


def _harmful_quantize(name: str):
    """``quantize``, then the FakeQuantize ``name`` clips to a hundredth of its range (a deliberately bad one)."""
    real = accuracy_control.quantize

    def quantize(*args, **kwargs) -> ov.Model:
        q = real(*args, **kwargs)
        fq = next(n for n in q.get_ordered_ops() if n.friendly_name == name)
        for port in range(1, 5):
            limit = np.asarray(fq.input_value(port).node.get_value()) * 0.01
            fq.set_argument(port, Constant(limit.astype(np.float32), name=f"{name}/limit{port}").output(0))
        q.validate_nodes_and_infer_types()
        return q
    return quantize


def test_groups_join_quantizers_that_feed_the_same_layers():
    model, calib, _ = _setup()
    groups = {tuple(sorted(g.quantizers)): sorted(g.layers) for g in find_quantizer_groups(ov.quantize(model, calib))}
    by_fq = {fq: (qs, layers) for qs, layers in groups.items() for fq in qs}
    # the pooled ReLU output feeds conv2 and the residual Add: its quantizer goes with conv2's weights and the
    # quantizer on the Add's other input
    qs, layers = by_fq["conv2/fq_weights_1"]
    assert "conv2" in layers and any(q.startswith(("relu1", "pool1")) for q in qs)
    assert by_fq["fc/fq_weights_1"] != by_fq["conv2/fq_weights_1"]
    assert sum(len(q) for q in groups) == len(_fq_names(ov.quantize(model, calib)))


def test_reverting_every_group_gives_the_float_model_back():
    model, calib, val = _setup()
    q = ov.quantize(model, calib)  # with bias correction: the revert must undo it
    back = revert_groups(q, find_quantizer_groups(q), bias_values(model))
    assert not _fq_names(back)
    a = next(val.get_inference_data())
    np.testing.assert_allclose(ov.Core().compile_model(back, "CPU")(a)[0], ov.Core().compile_model(model, "CPU")(a)[0],
                               rtol=1e-5, atol=1e-5)


def test_the_harmful_quantizer_is_reverted(monkeypatch):
    model, calib, val = _setup()
    bad = "relu2/fq_output_0" if "relu2/fq_output_0" in _fq_names(ov.quantize(model, calib)) else None
    bad = bad or sorted(n for n in _fq_names(ov.quantize(model, calib)) if "weights" not in n)[-1]
    monkeypatch.setattr(accuracy_control, "quantize", _harmful_quantize(bad))
    plain = _harmful_quantize(bad)(model, calib)
    before = _validate(ov.Core().compile_model(plain, "CPU"), val.get_data())
    q = ov.quantize_with_accuracy_control(model, calib, val, _validate, max_drop=0.05)
    after = _validate(ov.Core().compile_model(q, "CPU"), val.get_data())
    assert before < -0.05 and after >= -0.05, (before, after)
    info = {k: q.get_rt_info(["accuracy_control", k]).value for k in ("reverted_groups", "final_metric", "reached")}
    assert info["reached"] == "True" and info["reverted_groups"] >= 1
    assert info["final_metric"] == pytest.approx(after)
    assert bad not in _fq_names(q)
    assert _fq_names(q), "only the harmful group (and what it takes) goes back to float, not everything"


def test_no_revert_within_max_drop():
    model, calib, val = _setup()
    q = ov.quantize_with_accuracy_control(model, calib, val, _validate, max_drop=0.5)
    assert q.get_rt_info(["accuracy_control", "reverted_groups"]).value == 0
    assert _fq_names(q) == _fq_names(ov.quantize(model, calib))


def test_bad_arguments_are_named():
    model, calib, val = _setup()
    with pytest.raises(ov.quantization.QuantizationError, match="max_drop"):
        ov.quantize_with_accuracy_control(model, calib, val, _validate, max_drop=-1)
    with pytest.raises(ov.quantization.QuantizationError, match="drop_type"):
        ov.quantize_with_accuracy_control(model, calib, val, _validate, drop_type="percent")
    with pytest.raises(ov.quantization.QuantizationError, match="validation_fn"):
        ov.quantize_with_accuracy_control(model, calib, val, lambda c, items: "good")


def test_openvino_reads_the_result(tmp_path, monkeypatch):
    openvino = pytest.importorskip("openvino")
    model, calib, val = _setup()
    names = sorted(n for n in _fq_names(ov.quantize(model, calib)) if "weights" not in n)
    monkeypatch.setattr(accuracy_control, "quantize", _harmful_quantize(names[-1]))
    q = ov.quantize_with_accuracy_control(model, calib, val, _validate, max_drop=0.05)
    ov.save_model(q, tmp_path / "q.xml", compress_to_fp16=False)
    read = openvino.Core().read_model(str(tmp_path / "q.xml"))
    assert sum(op.get_type_name() == "FakeQuantize" for op in read.get_ops()) == len(_fq_names(q))
    a = next(val.get_inference_data())
    got = openvino.Core().compile_model(read, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})({0: a})[0]
    ref = ov.Core().compile_model(q, "CPU")(a)[0]
    assert np.abs(got - ref).max() < 0.05 * np.abs(ref).max() + 1e-3


def test_unnamed_nodes_are_found_in_clones():
    """Nodes without a friendly name get a new default name in each clone; freeze_names pins them."""
    from vinerun.quantization.quantizer_groups import freeze_names

    rng = np.random.default_rng(1)
    x = ov.opset1.parameter([1, 3, 8, 8], ov.Type.f32)
    c = ov.opset1.convolution(x, rng.standard_normal((4, 3, 3, 3)).astype(np.float32), [1, 1], [1, 1], [1, 1],
                              [1, 1])
    y = ov.opset1.relu(ov.opset1.add(c, np.full((1, 4, 1, 1), 0.5, np.float32)))
    model = ov.Model([y], [x])
    named = model.clone()
    freeze_names(named)
    calib = [rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(4)]
    q = ov.quantize(named, calib)
    back = revert_groups(q.clone(), find_quantizer_groups(q), bias_values(named))
    assert not _fq_names(back)
    np.testing.assert_allclose(ov.Core().compile_model(back, "CPU")(calib[0])[0],
                               ov.Core().compile_model(model, "CPU")(calib[0])[0], rtol=1e-5, atol=1e-5)
