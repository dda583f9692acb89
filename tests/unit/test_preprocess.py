"""PrePostProcessor (built into the model as ops) and get_batch / set_batch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import ValidationError
from vinerun.preprocess import ColorFormat, PrePostProcessor, ResizeAlgorithm

RNG = np.random.default_rng(0)
WEIGHTS = RNG.standard_normal((2, 3, 1, 1)).astype(np.float32)


def _model(h: int = 8, w: int = 8, batch: int = 1) -> ov.Model:
    """A 1x1 convolution NCHW f32 [batch, 3, h, w] -> [batch, 2, h, w]: channel order matters."""
    x = ops.parameter([batch, 3, h, w], ov.Type.f32, name="image")
    conv = ops.convolution(x, ops.constant(WEIGHTS), [1, 1], [0, 0], [0, 0], [1, 1])
    conv.output(0).set_names({"features"})
    return ov.Model([conv], [x], "conv")


def _run(model: ov.Model, *inputs: np.ndarray) -> np.ndarray:
    return ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(list(inputs))[0]


def _image(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.integers(0, 256, shape).astype(np.uint8)


def test_u8_nhwc_input_feeds_an_nchw_model() -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().tensor().set_element_type(ov.Type.u8).set_layout(ov.Layout("NHWC"))
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    model = ppp.build()
    assert model.input().get_element_type() == ov.Type.u8
    assert model.input().partial_shape == ov.PartialShape([1, 8, 8, 3])
    assert model.input().get_names() == {"image"} and model.output().get_names() == {"features"}
    img = _image((1, 8, 8, 3))
    manual = _run(_model(), img.astype(np.float32).transpose(0, 3, 1, 2))
    np.testing.assert_allclose(_run(model, img), manual, rtol=1e-5, atol=1e-4)
    kinds = [n.type_name for n in model.get_ordered_ops()]
    assert "Convert" in kinds and "Transpose" in kinds


@pytest.mark.parametrize(("mean", "scale"), [([10.0, 20.0, 30.0], [2.0, 4.0, 8.0]), (127.5, 255.0)])
def test_mean_and_scale(mean: list[float] | float, scale: list[float] | float) -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().tensor().set_element_type(ov.Type.u8)
    ppp.input().preprocess().convert_element_type(ov.Type.f32).mean(mean).scale(scale)
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    model = ppp.build()
    img = _image((1, 3, 8, 8))
    shape = (1, 3, 1, 1) if isinstance(mean, list) else ()
    want = (img.astype(np.float32) - np.reshape(mean, shape).astype(np.float32)) / np.reshape(scale, shape)
    np.testing.assert_allclose(_run(model, img), _run(_model(), want.astype(np.float32)), rtol=1e-5, atol=1e-5)


def test_mean_on_integers_asks_for_a_conversion() -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().tensor().set_element_type(ov.Type.u8)
    ppp.input().preprocess().mean(1.0)
    with pytest.raises(ValidationError,
                       match=r"input 'image'.*Mean preprocessing can be applied to 'float' inputs.*convert_element"):
        ppp.build()


def test_resize_nearest_upsamples_by_repeating() -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().tensor().set_spatial_static_shape(4, 4)
    ppp.input().preprocess().resize(ResizeAlgorithm.RESIZE_NEAREST)
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    model = ppp.build()
    assert model.input().partial_shape == ov.PartialShape([1, 3, 4, 4])
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(_run(model, x), _run(_model(), x.repeat(2, axis=2).repeat(2, axis=3)), rtol=1e-5)


def test_resize_without_a_layout_is_refused() -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().preprocess().resize(ResizeAlgorithm.RESIZE_LINEAR, 8, 8)
    with pytest.raises(ValidationError, match="Can't add resize for layout without W/H specified"):
        ppp.build()


def test_bgr_to_rgb_reverses_channels() -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().tensor().set_element_type(ov.Type.u8).set_color_format(ColorFormat.BGR)
    ppp.input().preprocess().convert_element_type(ov.Type.f32).convert_color(ColorFormat.RGB)
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    model = ppp.build()
    bgr = _image((1, 8, 8, 3))
    rgb_nchw = bgr[..., ::-1].astype(np.float32).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(_run(model, bgr), _run(_model(), rgb_nchw), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("color", [ColorFormat.NV12_SINGLE_PLANE, ColorFormat.NV12_TWO_PLANES,
                                   ColorFormat.I420_SINGLE_PLANE, ColorFormat.I420_THREE_PLANES])
def test_yuv_gray_image_gives_equal_channels(color: ColorFormat) -> None:
    """Y = 116, U = V = 128 is gray: R = G = B = 1.164 * (116 - 16) = 116.4."""
    ppp = PrePostProcessor(_model(4, 6))
    ppp.input().tensor().set_element_type(ov.Type.u8).set_color_format(color)
    ppp.input().preprocess().convert_element_type(ov.Type.f32).convert_color(ColorFormat.RGB)
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    model = ppp.build()
    shapes = [tuple(p.get_partial_shape().to_shape()) for p in model.get_parameters()]
    planes = [np.full(s, 128, np.uint8) for s in shapes]
    planes[0][:, : 4] = 116  # the Y rows (all of plane 0 when planes are separate)
    if len(planes) == 1:
        assert shapes == [(1, 6, 6, 1)]
    got = _run(model, *planes)
    want = _run(_model(4, 6), np.full((1, 3, 4, 6), np.float32(1.164) * 100, np.float32))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    if color == ColorFormat.NV12_TWO_PLANES:  # as OpenVINO: planes get names only from set_color_format's sub_names
        assert all(not p.output(0).get_names() for p in model.get_parameters())


def test_yuv_without_color_conversion_is_refused() -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().tensor().set_color_format(ColorFormat.NV12_TWO_PLANES)
    with pytest.raises(ValidationError, match="Multiple plane input is not allowed.*convert_color"):
        ppp.build()


def test_custom_step_and_output_postprocessing() -> None:
    ppp = PrePostProcessor(_model())
    ppp.input().preprocess().custom(lambda x: ops.abs(x))
    ppp.output().tensor().set_element_type(ov.Type.f16).set_layout(ov.Layout("NHWC"))
    ppp.output().model().set_layout(ov.Layout("NCHW"))
    model = ppp.build()
    assert model.output().get_element_type() == ov.Type.f16
    assert model.output().get_names() == {"features"}
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = _run(_model(), np.abs(x)).transpose(0, 2, 3, 1).astype(np.float16)
    got = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})({"image": x})["features"]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_get_and_set_batch() -> None:
    model = _model()
    with pytest.raises(ValidationError, match="no input has a layout with a batch dimension 'N'.*'image'"):
        ov.get_batch(model)
    model.input().node.set_layout(ov.Layout("NCHW"))
    assert ov.get_batch(model) == 1
    ov.set_batch(model, 4)
    assert model.input().partial_shape == ov.PartialShape([4, 3, 8, 8])
    assert model.output().partial_shape == ov.PartialShape([4, 2, 8, 8])
    x = RNG.standard_normal((4, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(model, x)[2:3], _run(_model(), x[2:3]), rtol=1e-5, atol=1e-5)
    ov.set_batch(model, -1)
    assert model.input().partial_shape[0].is_dynamic


def test_get_batch_disagreement_is_reported() -> None:
    a = ops.parameter([2, 3], ov.Type.f32, name="a")
    b = ops.parameter([3, 3], ov.Type.f32, name="b")
    a.set_layout(ov.Layout("NC"))
    b.set_layout(ov.Layout("NC"))
    with pytest.raises(ValidationError, match="disagree on the batch size"):
        ov.get_batch(ov.Model([ops.relu(a), ops.relu(b)], [a, b]))


def test_set_batch_follows_the_layout() -> None:
    model = _model()
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_layout(ov.Layout("HWCN"))
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    ppp.build()
    assert model.input().partial_shape == ov.PartialShape([8, 8, 3, 1])
    ov.set_batch(model, 2)
    assert model.input().partial_shape == ov.PartialShape([8, 8, 3, 2])


# --- openvino as the oracle --------------------------------------------------------------
def _both(tmp_path: Path, configure: Callable[[object, object, object], None]) -> tuple[ov.Model, object]:
    ovr = pytest.importorskip("openvino")
    from openvino import preprocess as ovr_pp

    path = tmp_path / "conv.xml"
    ov.save_model(_model(), str(path))
    ours = PrePostProcessor(ov.Core().read_model(str(path)))
    configure(ours, ov, ov.preprocess)
    theirs = ovr_pp.PrePostProcessor(ovr.Core().read_model(str(path)))
    configure(theirs, ovr, ovr_pp)
    return ours.build(), ovr.Core().compile_model(theirs.build(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def test_full_pipeline_matches_openvino(tmp_path: Path) -> None:
    def configure(ppp, lib, pp) -> None:  # noqa: ANN001 - the same code for both libraries
        t = ppp.input().tensor()
        t.set_element_type(lib.Type.u8).set_layout(lib.Layout("NHWC")).set_spatial_static_shape(16, 12)
        t.set_color_format(pp.ColorFormat.BGR)
        steps = ppp.input().preprocess().convert_element_type(lib.Type.f32).convert_color(pp.ColorFormat.RGB)
        steps.resize(pp.ResizeAlgorithm.RESIZE_LINEAR).mean([120.0, 110.0, 100.0]).scale([60.0, 58.0, 57.0])
        ppp.input().model().set_layout(lib.Layout("NCHW"))

    ours, theirs = _both(tmp_path, configure)
    img = _image((1, 16, 12, 3))
    np.testing.assert_allclose(_run(ours, img), theirs([img])[0], rtol=1e-4, atol=1e-4)


def test_nv12_matches_openvino(tmp_path: Path) -> None:
    def configure(ppp, lib, pp) -> None:  # noqa: ANN001
        ppp.input().tensor().set_element_type(lib.Type.u8).set_layout(lib.Layout("NHWC")).set_color_format(
            pp.ColorFormat.NV12_SINGLE_PLANE)
        ppp.input().preprocess().convert_element_type(lib.Type.f32).convert_color(pp.ColorFormat.BGR)
        ppp.input().model().set_layout(lib.Layout("NCHW"))

    ours, theirs = _both(tmp_path, configure)
    img = _image((1, 12, 8, 1))
    np.testing.assert_allclose(_run(ours, img), theirs([img])[0], rtol=1e-4, atol=1e-3)
