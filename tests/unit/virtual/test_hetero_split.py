"""HETERO splitting on a test-only device that runs only ReLU: affinities, subgraph count, no
cycles between subgraphs (diamonds), manual affinity, outputs equal to CPU's."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import vinerun as ov
from tests.unit.virtual.fake_devices import FakeDevice
from vinerun import opset13 as ops
from vinerun.errors import DeviceError, NotSupportedError, PropertyError
from vinerun.ir.model import Model

X = np.linspace(-2, 2, 8, dtype=np.float32).reshape(1, 8)


def _split(compiled: ov.CompiledModel) -> list[tuple[str, list[str]]]:
    """``[(device, [node names])]`` of each submodel, Parameters/Constants/Results left out."""
    return [(s.device, [n.friendly_name for n in s.model.get_ordered_ops()
                        if n.type_name not in ("Parameter", "Constant", "Result")])
            for s in compiled._impl.split.submodels]


def _check_outputs(core: ov.Core, model: Model, compiled: ov.CompiledModel) -> None:
    want = core.compile_model(model, "CPU")({"x": X})
    got = compiled({"x": X})
    for i in range(len(model.outputs)):
        np.testing.assert_allclose(got[i], want[i], rtol=1e-6, atol=1e-6)


@pytest.fixture
def relu_only(fake_device: Callable[..., FakeDevice]) -> FakeDevice:
    return fake_device("FAKE", ops={"Relu"})


def test_diamond_with_the_other_device_on_one_arm_needs_three_subgraphs(core: ov.Core, relu_only: FakeDevice) -> None:
    # a(CPU) -> b(FAKE) -> d(CPU) and a -> c(CPU) -> d: d cannot join {a, c} (b is both after and before it)
    x = ops.parameter([1, 8], name="x")
    a = ops.sigmoid(x, name="a")
    b = ops.relu(a, name="b")
    c = ops.tanh(a, name="c")
    d = ops.add(b, c, name="d")
    model = Model([d], [x], "diamond")
    compiled = core.compile_model(model, "HETERO:FAKE,CPU")
    assert _split(compiled) == [("CPU", ["a", "c"]), ("FAKE", ["b"]), ("CPU", ["d"])]
    assert compiled.get_property("HETERO_NUMBER_OF_SUBMODELS") == 3
    _check_outputs(core, model, compiled)


def test_diamond_with_both_arms_on_the_consumers_device_is_two_subgraphs(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    a = ops.relu(x, name="a")
    b = ops.sigmoid(a, name="b")
    c = ops.tanh(a, name="c")
    d = ops.add(b, c, name="d")
    model = Model([d], [x], "diamond2")
    compiled = core.compile_model(model, "HETERO:FAKE,CPU")
    assert _split(compiled) == [("FAKE", ["a"]), ("CPU", ["b", "c", "d"])]
    _check_outputs(core, model, compiled)


def test_independent_branches_of_one_device_share_a_subgraph(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    a = ops.sigmoid(x, name="a")
    b = ops.relu(a, name="b")
    c = ops.tanh(x, name="c")
    d = ops.relu(c, name="d")
    model = Model([b, d], [x], "branches")
    compiled = core.compile_model(model, "HETERO:FAKE,CPU")
    assert _split(compiled) == [("CPU", ["a", "c"]), ("FAKE", ["b", "d"])]
    _check_outputs(core, model, compiled)


def test_alternating_chain_cannot_be_merged(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    y = ops.tanh(ops.relu(ops.sigmoid(x, name="a"), name="b"), name="c")
    model = Model([y], [x], "chain")
    compiled = core.compile_model(model, "HETERO:FAKE,CPU")
    assert [d for d, _ in _split(compiled)] == ["CPU", "FAKE", "CPU"]
    _check_outputs(core, model, compiled)


def test_manual_affinity_overrides_query_model(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    a = ops.relu(x, name="a")
    b = ops.relu(a, name="b")
    b.rt_info["affinity"] = "CPU"
    model = Model([b], [x], "manual")
    assert core.query_model(model, "HETERO:FAKE,CPU")["b"] == "CPU"
    compiled = core.compile_model(model, "HETERO:FAKE,CPU")
    assert _split(compiled) == [("FAKE", ["a"]), ("CPU", ["b"])]
    _check_outputs(core, model, compiled)


def test_query_model_places_every_node(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    y = ops.sigmoid(ops.relu(x, name="a"), name="b")
    result = core.query_model(Model([y], [x], "q"), "HETERO:FAKE,CPU")
    assert result["a"] == "FAKE" and result["b"] == "CPU" and result["x"] == "FAKE"


def test_a_node_no_device_supports_is_named(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    model = Model([ops.sigmoid(x, name="squash")], [x], "m")
    with pytest.raises(NotSupportedError, match="squash"):
        core.compile_model(model, "HETERO:FAKE")


def test_device_list_and_properties_are_checked(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    model = Model([ops.relu(x)], [x], "m")
    with pytest.raises(DeviceError, match="HETERO:GNA,CPU"):
        core.compile_model(model, "HETERO")
    with pytest.raises(PropertyError, match="NO_SUCH_KEY"):
        core.compile_model(model, "HETERO:FAKE,CPU", {"NO_SUCH_KEY": 1})


def test_async_requests_run_the_pipeline(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    model = Model([ops.tanh(ops.relu(ops.sigmoid(x, name="a"), name="b"), name="c")], [x], "chain")
    compiled = core.compile_model(model, "HETERO:FAKE,CPU")
    want = core.compile_model(model, "CPU")
    requests = [compiled.create_infer_request() for _ in range(3)]
    inputs = [X * (i + 1) for i in range(3)]
    for r, xi in zip(requests, inputs, strict=True):
        r.start_async({"x": xi})
    for r, xi in zip(requests, inputs, strict=True):
        r.wait()
        np.testing.assert_allclose(r.get_output_tensor(0).data, want({"x": xi})[0], rtol=1e-6, atol=1e-6)
    assert relu_only.infer_count == 3


def test_export_and_import_redo_the_split(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    model = Model([ops.tanh(ops.relu(ops.sigmoid(x, name="a"), name="b"), name="c")], [x], "chain")
    compiled = core.compile_model(model, "HETERO:FAKE,CPU")
    imported = core.import_model(compiled.export_model(), "HETERO")
    assert imported.get_property("HETERO_NUMBER_OF_SUBMODELS") == 3
    np.testing.assert_array_equal(imported({"x": X})[0], compiled({"x": X})[0])


def test_partition_of_random_graphs_is_acyclic_and_keeps_one_device_per_subgraph() -> None:
    from vinerun.virtual.hetero.partition import partition

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 14))
        preds = {i: sorted({int(p) for p in rng.integers(0, i, size=int(rng.integers(0, 3)))}) if i else []
                 for i in range(n)}
        affinity = {i: ("A", "B")[int(rng.integers(0, 2))] for i in range(n)}
        groups = partition(list(range(n)), affinity, preds.__getitem__)
        of = {node: g for g, sub in enumerate(groups) for node in sub.nodes}
        assert sorted(of) == list(range(n))
        assert all(affinity[node] == sub.device for sub in groups for node in sub.nodes)
        # listed producers first: every edge between subgraphs goes forward, so there is no cycle
        assert all(of[p] <= of[i] for i in range(n) for p in preds[i])
        if len(set(affinity.values())) == 1:
            assert len(groups) == 1


def test_outputs_read_straight_from_an_input_or_a_constant(core: ov.Core, relu_only: FakeDevice) -> None:
    x = ops.parameter([1, 8], name="x")
    two = ops.add(ops.constant(np.ones((1, 8), np.float32)), ops.constant(np.ones((1, 8), np.float32)), name="two")
    model = Model([ops.relu(x, name="r"), x, two], [x], "pass_through")
    out = core.compile_model(model, "HETERO:FAKE,CPU")({"x": X})
    np.testing.assert_array_equal(out[0], np.maximum(X, 0))
    np.testing.assert_array_equal(out[1], X)
    np.testing.assert_array_equal(out[2], np.full((1, 8), 2, np.float32))
    placed = core.query_model(model, "HETERO:FAKE,CPU")
    assert placed["r"] == placed["x"] == "FAKE"


def test_a_failing_submodel_compile_names_the_subgraph_and_device(
        core: ov.Core, fake_device: Callable[..., FakeDevice]) -> None:
    fake_device("BROKEN", ops={"Relu"}, compile_error=DeviceError("no room on the device"))
    x = ops.parameter([1, 8], name="x")
    model = Model([ops.relu(ops.sigmoid(x, name="a"), name="b")], [x], "m")
    with pytest.raises(DeviceError, match="subgraph1 on BROKEN failed: no room on the device"):
        core.compile_model(model, "HETERO:BROKEN,CPU")
