"""PrePostProcessor and Layout behave as OpenVINO's: step names in ``str(ppp)``, the ops each step inserts,
OpenVINO's error texts, a failed ``build()`` leaving the model untouched, layout parsing and arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
import vinerun.opset13 as ops
from vinerun import Layout, Model, Tensor, Type
from vinerun.ir.layout import apply_permutation, find_permutation
from vinerun.preprocess import ColorFormat, PaddingMode, PrePostProcessor, ResizeAlgorithm
from vinerun.utils.decorators import custom_preprocess_function


def _model(shape: list[int], dtype: type = np.float32, name: str = "A") -> Model:
    p = ops.parameter(shape, dtype=dtype, name=name)
    return Model(p, [p], "TestModel")


def _types(model: Model) -> list[str]:
    return [op.get_type_name() for op in model.get_ordered_ops()]


def _run(model: Model, *inputs: np.ndarray) -> np.ndarray:
    return ov.Core().compile_model(model, "CPU")(list(inputs))[0]


# ---------------------------------------------------------------- Layout
@pytest.mark.parametrize(("text", "shown"), [("NCHW", "[N,C,H,W]"), ("nchw", "[N,C,H,W]"), ("N?C", "[N,?,C]"),
                                             ("NC...", "[N,C,...]"), ("...C", "[...,C]"), ("", "[...]"),
                                             ("[batch,channels,?]", "[N,C,?]"), ("[n,c,...,w]", "[N,C,...,W]"),
                                             ("[a_b,c1]", "[A_B,C1]"), ("**SCALAR**", "**SCALAR**")])
def test_layout_text_forms(text: str, shown: str) -> None:
    layout = Layout(text)
    assert layout.to_string() == shown and str(layout) == shown and repr(layout) == f"<Layout: {shown}>"


@pytest.mark.parametrize(("text", "words"), [("1-2-3D", "Layout name is invalid (-)"),
                                              ("5-5", "Layout name is invalid"),
                                              ("ab_c", "Name shall have alphanumeric"),
                                              ("N..C", "shall have ..."), ("NCHN", "defined multiple times")])
def test_bad_layouts_raise_runtime_errors(text: str, words: str) -> None:
    with pytest.raises(RuntimeError, match=rf"{words.replace('(', '.').replace(')', '.')}"):
        Layout(text)


def test_layout_queries_and_equality() -> None:
    assert Layout().empty and not Layout("NC").empty  # a property, as in OpenVINO
    assert Layout("NC...HW").get_index_by_name("H") == -2 and Layout("NCHW").has_name("batch")
    assert Layout("NCHW") == "NCHW" and Layout("NCHW") == Layout("[N,C,H,W]") and Layout("NC...") != Layout("NC")
    with pytest.raises(RuntimeError, match="X dimension index is not defined"):
        Layout("NCHW").get_index_by_name("X")
    assert Layout.scalar().to_string() == "**SCALAR**"


def test_layout_permutations() -> None:
    shape = ov.PartialShape([1, 2, 3, 4])
    assert find_permutation(Layout("NCHW"), shape, Layout("NHWC")) == [0, 2, 3, 1]
    assert find_permutation(Layout("NCHW"), shape, Layout("NCHW")) == []
    assert find_permutation(Layout("N...C"), shape, Layout("NC...")) == [0, 3, 1, 2]
    assert apply_permutation(Layout("NCHW"), [0, 2, 3, 1]) == Layout("NHWC")
    with pytest.raises(RuntimeError, match="used more than once"):
        apply_permutation(Layout("NCHW"), [0, 0, 1, 2])


def test_model_set_layout_rejects_bad_text() -> None:
    ppp = PrePostProcessor(_model([1, 3, 4, 4]))
    with pytest.raises(RuntimeError, match="Layout name is invalid"):
        ppp.input().model().set_layout("1-2-3D")


# ---------------------------------------------------------------- str(PrePostProcessor)
def test_dump_lists_steps_and_implicit_steps_as_openvino() -> None:
    ppp = PrePostProcessor(_model([1, 3, 224, 224], name="RGB_input"))
    ppp.input().tensor().set_layout(Layout("NHWC")).set_element_type(Type.u8).set_spatial_dynamic_shape()
    ppp.input().preprocess().convert_element_type(Type.f32).reverse_channels().mean([1, 2, 3]).scale([4, 5, 6])
    ppp.input().preprocess().resize(ResizeAlgorithm.RESIZE_LINEAR)
    ppp.input().model().set_layout(Layout("NCHW"))
    text = str(ppp)
    assert text.splitlines() == [
        'Input "RGB_input":',
        "    User's input tensor: [1,?,?,3], [N,H,W,C], u8",
        "    Model's expected tensor: [1,3,224,224], [N,C,H,W], f32",
        "    Pre-processing steps (5):",
        "      convert type (f32): ([1,?,?,3], [N,H,W,C], u8) -> ([1,?,?,3], [N,H,W,C], f32)",
        "      reverse channels: ([1,?,?,3], [N,H,W,C], f32) -> ([1,?,?,3], [N,H,W,C], f32)",
        "      mean (1,2,3): ([1,?,?,3], [N,H,W,C], f32) -> ([1,?,?,3], [N,H,W,C], f32)",
        "      scale (4,5,6): ([1,?,?,3], [N,H,W,C], f32) -> ([1,?,?,3], [N,H,W,C], f32)",
        "      resize to model width/height: ([1,?,?,3], [N,H,W,C], f32) -> ([1,224,224,3], [N,H,W,C], f32)",
        "    Implicit pre-processing steps (1):",
        "      convert layout [N,C,H,W]: ([1,224,224,3], [N,H,W,C], f32) -> ([1,3,224,224], [N,C,H,W], f32)"]
    assert repr(ppp) == f"<PrePostProcessor: {text}>"


def test_dump_of_nothing_is_empty_and_touches_nothing() -> None:
    model = _model([1, 1, 2, 2])
    ppp = PrePostProcessor(model)
    assert str(ppp) == ""
    ppp.output().tensor().set_element_type(Type.f16)
    ppp.output().postprocess().convert_layout([0, 2, 1, 3])
    assert str(ppp).splitlines()[-2:] == ["      convert type (f16): ([1,2,1,2], <no layout>, f32) -> "
                                          "([1,2,1,2], <no layout>, f16)",
                                          "    User's output tensor: [1,2,1,2], <no layout>, f16"]
    assert _types(model) == ["Parameter", "Result"]
    assert not model.get_parameters()[0].output(0).get_target_inputs() - {model.get_results()[0].input(0)}


def test_dump_reports_the_failing_step() -> None:
    ppp = PrePostProcessor(_model([1, 3, 3, 3]))
    ppp.input().tensor().set_color_format(ColorFormat.RGB)
    ppp.input().preprocess().convert_color(ColorFormat.RGBX)
    text = str(ppp)
    assert "convert color (RGBX): ([1,3,3,3], [N,H,W,C], f32, RGB\nError occurred: " in text
    assert "Source color format 'RGB' is not convertible to 'RGBX'" in text


# ---------------------------------------------------------------- steps: ops and values
def test_mean_and_scale_lists_subtract_and_multiply_per_channel() -> None:
    model = _model([2, 2])
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_layout("NC")
    ppp.input().preprocess().mean([1.0, 2.0]).scale([0.5, 2.0])
    model = ppp.build()
    assert _types(model) == ["Parameter", "Constant", "Subtract", "Constant", "Multiply", "Result"]
    x = np.array([[3, 4], [5, 6]], np.float32)
    np.testing.assert_allclose(_run(model, x), (x - [1, 2]) / [0.5, 2.0])


def test_convert_element_type_without_argument_goes_to_the_model_type() -> None:
    model = _model([2, 2], np.int32)
    ppp = PrePostProcessor(model)
    ppp.input().preprocess().convert_element_type(Type.f32).mean(1.0).scale(2.0).convert_element_type()
    assert "convert type (dynamic)" in str(ppp)
    model = ppp.build()
    assert model.input().get_element_type() == Type.i32 and model.output().get_element_type() == Type.i32
    np.testing.assert_array_equal(_run(model, np.array([[5, 7], [9, 1]], np.int32)), [[2, 3], [4, 0]])


def test_custom_step_with_decorator_and_postprocessing() -> None:
    @custom_preprocess_function
    def absolute(output: ov.Output) -> ov.Node:
        return ops.abs(output)

    assert isinstance(absolute(ops.parameter([1], np.float32).output(0)), ov.Output)
    model = _model([2, 3], np.int32)
    ppp = PrePostProcessor(model)
    ppp.input().preprocess().custom(absolute)
    out = ppp.output()
    out.model().set_layout("NC")
    out.tensor().set_element_type(Type.f32)
    out.postprocess().convert_layout("CN").convert_layout([1, 0]).custom(absolute)
    model = ppp.build()
    assert model.output().get_element_type() == Type.f32 and list(model.output().get_shape()) == [2, 3]
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.int32)
    np.testing.assert_array_equal(_run(model, x), np.abs(x).astype(np.float32))
    assert model.output().get_node().input_value(0).node.get_friendly_name().endswith(".0")


def test_crop_and_pad() -> None:
    model = _model([1, 2, 2, 2])
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_shape([1, 2, 3, 3])
    ppp.input().preprocess().crop([0, 0, 1, 1], [1, 2, -1, -1]).pad([0, 0, 1, 1], [0, 0, 0, 0], 7.0,
                                                                     PaddingMode.CONSTANT)
    assert "Crop ([ 0, 0, 1, 1 ],[ 1, 2, -1, -1 ])" in str(ppp)
    assert "pad(begin (0,0,1,1), end (0,0,0,0), with (7))" in str(ppp)
    model = ppp.build()
    assert "Slice" in _types(model) and "Pad" in _types(model)
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    want = np.pad(x[:, :, 1:2, 1:2], [(0, 0), (0, 0), (1, 0), (1, 0)], constant_values=7)
    np.testing.assert_array_equal(_run(model, x), want)


def test_pad_errors_are_openvino_s() -> None:
    ppp = PrePostProcessor(_model([1, 3, 5, 5]))
    ppp.input().preprocess().pad([0, 0, 2, 0, 1], [0, 0, 4, 1, 1], 0, PaddingMode.CONSTANT)
    with pytest.raises(RuntimeError, match="mismatches with rank of input"):
        ppp.build()
    ppp = PrePostProcessor(_model([1, 3, 5, 5]))
    ppp.input().preprocess().pad([0, 0, -2, 0], [0, 0, -4, 1], 0, PaddingMode.CONSTANT)
    with pytest.raises(RuntimeError, match="not aligned with original parameter's shape"):
        ppp.build()


def test_failed_build_leaves_the_model_unchanged() -> None:
    model = _model([1, 3, 3, 3])
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_layout("NCWH").set_color_format(ColorFormat.RGB, [])
    ppp.input().preprocess().mean(1.0).resize(ResizeAlgorithm.RESIZE_NEAREST, 3, 3).convert_layout("NCHW")
    ppp.input().preprocess().convert_color(ColorFormat.I420_SINGLE_PLANE)
    with pytest.raises(RuntimeError, match="is not convertible to"):
        ppp.build()
    assert _types(model) == ["Parameter", "Result"] and model.input().get_names() == {"A"}
    x = np.ones((1, 3, 3, 3), np.float32)
    np.testing.assert_array_equal(_run(model, x), x)


@pytest.mark.parametrize(("src", "dst"), [(ColorFormat.RGB, ColorFormat.BGR), (ColorFormat.BGRX, ColorFormat.RGB),
                                          (ColorFormat.RGBX, ColorFormat.RGB)])
def test_color_channel_conversions(src: ColorFormat, dst: ColorFormat) -> None:
    model = _model([1, 2, 2, 3])
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_color_format(src)
    ppp.input().preprocess().convert_color(dst)
    model = ppp.build()
    channels = 4 if src.name.endswith("X") else 3
    x = np.arange(4 * channels, dtype=np.float32).reshape(1, 2, 2, channels)
    want = x[..., :3] if src.name[:3] == dst.name else x[..., 2::-1]
    np.testing.assert_array_equal(_run(model, x), want)


def test_rgb_to_gray_weights_and_rounding() -> None:
    model = _model([1, 2, 2, 1])
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_color_format(ColorFormat.RGB)
    ppp.input().preprocess().convert_color(ColorFormat.GRAY)
    model = ppp.build()
    assert list(model.input().get_shape()) == [1, 2, 2, 3]
    x = np.array([[[[10, 200, 30], [255, 0, 0]], [[0, 100, 0], [0, 0, 255]]]], np.float32)
    want = x @ np.array([0.299, 0.587, 0.114], np.float32)
    np.testing.assert_allclose(_run(model, x)[..., 0], want, rtol=1e-2)  # the CPU may run f32 in bf16
    # integers: computed in f32, rounded half to even, converted back (as OpenCV and OpenVINO)
    ppp = PrePostProcessor(_model([1, 2, 2, 1], np.uint8))
    ppp.input().tensor().set_color_format(ColorFormat.BGR)
    ppp.input().preprocess().convert_color(ColorFormat.GRAY)
    assert _types(ppp.build()) == ["Parameter", "Constant", "Transpose", "Convert", "Constant", "Convolution",
                                   "Round", "Convert", "Constant", "Transpose", "Result"]


def test_resize_to_model_size_and_spatial_shapes() -> None:
    param = ops.parameter([1, 4, 4, 3], np.float32, name="A")
    param.set_layout(Layout("NHWC"))
    model = Model(param, [param], "m")
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_spatial_static_shape(8, 8)
    ppp.input().preprocess().resize(ResizeAlgorithm.RESIZE_NEAREST)
    model = ppp.build()
    assert list(model.input().get_shape()) == [1, 8, 8, 3]
    x = np.arange(192, dtype=np.float32).reshape(1, 8, 8, 3)
    assert _run(model, x).shape == (1, 4, 4, 3)


def test_set_from_tensor_or_array_and_memory_type() -> None:
    model = _model([1, 1, 1])
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_from(np.zeros((3, 3, 3), np.int32)).set_memory_type("GPU_SURFACE")
    ppp.input().preprocess().convert_element_type().crop([1, 1, 1], [2, 2, 2])
    model = ppp.build()
    assert list(model.input().get_shape()) == [3, 3, 3] and model.input().get_element_type() == Type.i32
    assert any("memory_type" in key for key in model.input().get_rt_info())
    ppp = PrePostProcessor(_model([1, 2, 2, 3]))
    ppp.input().tensor().set_from(Tensor(Type.u8, [1, 4, 4, 3]))
    assert "User's input tensor: [1,4,4,3], <no layout>, u8" in str(ppp)


def test_inputs_by_name_and_index_errors() -> None:
    a, b = ops.parameter([1], np.float32, name="a"), ops.parameter([1], np.float32, name="b")
    ppp = PrePostProcessor(Model([ops.add(a, b)], [a, b], "m"))
    assert ppp.input("b") is ppp.input(1)
    with pytest.raises(RuntimeError, match="Model must have exactly one input, got 2"):
        ppp.input()
    with pytest.raises(RuntimeError, match="doesn't have input with index 5. Total number of inputs is 2"):
        ppp.input(5)
    with pytest.raises(RuntimeError, match="doesn't have input with name zz"):
        ppp.input("zz")


def test_two_plane_nv12_names_come_from_sub_names() -> None:
    param = ops.parameter([1, 3, 4, 4], np.float32, name="A")
    param.set_layout(Layout("NCHW"))
    model = Model(param, [param], "m")
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_color_format(ColorFormat.NV12_TWO_PLANES, ["y", "uv"]).set_element_type(Type.u8)
    ppp.input().preprocess().convert_color(ColorFormat.BGR)
    assert "       1: A/uv [1,2,2,2], [N,H,W,C], u8" in str(ppp)
    model = ppp.build()
    assert [p.output(0).get_names() for p in model.get_parameters()] == [{"A/y"}, {"A/uv"}]
    assert [list(p.get_partial_shape().to_shape()) for p in model.get_parameters()] == [[1, 4, 4, 1], [1, 2, 2, 2]]


@pytest.mark.parametrize(("mode", "pil_filter", "dtype"), [("bilinear_pillow", "BILINEAR", np.float32),
                                                         ("bicubic_pillow", "BICUBIC", np.uint8)])
@pytest.mark.parametrize("size", [(3, 4), (9, 11)])
def test_pillow_interpolation_matches_pillow(mode: str, pil_filter: str, dtype: type, size: tuple[int, int]) -> None:
    image = pytest.importorskip("PIL.Image")
    param = ops.parameter([1, 5, 7, 1], dtype, name="A")
    # Pillow's bicubic has a = -0.5 (Interpolate's cube_coeff, -0.75 by default)
    interp = ops.interpolate(param, np.array(size, np.int64), mode, "sizes", cube_coeff=-0.5,
                             axes=np.array([1, 2], np.int64))
    x = (np.random.default_rng(1).random((1, 5, 7, 1)) * 255).astype(dtype)
    pil = image.fromarray(x[0, :, :, 0], mode="F" if dtype == np.float32 else "L")
    want = np.asarray(pil.resize(size[::-1], getattr(image, pil_filter)))
    got = _run(Model([interp], [param], "pil"), x)[0, :, :, 0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("algorithm", list(ResizeAlgorithm))
def test_every_resize_algorithm_builds_an_interpolate(algorithm: ResizeAlgorithm) -> None:
    ppp = PrePostProcessor(_model([1, 3, 4, 4]))
    ppp.input().tensor().set_layout("NCHW").set_shape([1, 3, 8, 6])
    ppp.input().preprocess().resize(algorithm)
    model = ppp.build()
    interp = [op for op in model.get_ordered_ops() if op.get_type_name() == "Interpolate"][0]
    assert interp.get_attributes()["mode"] == algorithm.name[len("RESIZE_"):].lower()
    assert _run(model, np.ones((1, 3, 8, 6), np.float32)).shape == (1, 3, 4, 4)
