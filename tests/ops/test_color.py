"""NV12toRGB / NV12toBGR / I420toRGB / I420toBGR (opset8): planes, types, shape checks; openvino as oracle."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset8 as ops
from vinerun.errors import ValidationError
from vinerun.ir.interpreter import run_reference

RNG = np.random.default_rng(0)
NAMES = ["nv12_to_rgb", "nv12_to_bgr", "i420_to_rgb", "i420_to_bgr"]


def _run(name: str, planes: list[np.ndarray]) -> np.ndarray:
    params = [ops.parameter(list(p.shape), ov.Type(p.dtype)) for p in planes]
    return run_reference(ov.Model([getattr(ops, name)(*params)], params), planes)[0]


def test_gray_is_equal_channels_and_rgb_is_reversed_bgr() -> None:
    img = np.full((1, 6, 4, 1), 128, np.uint8)
    img[:, :4] = 200
    for name in NAMES:
        out = _run(name, [img])
        assert out.shape == (1, 4, 4, 3) and out.dtype == np.uint8
        assert (out == np.uint8(round(1.164 * 184))).all()
    yuv = RNG.integers(0, 256, (2, 6, 4, 1)).astype(np.uint8)
    np.testing.assert_array_equal(_run("nv12_to_rgb", [yuv]), _run("nv12_to_bgr", [yuv])[..., ::-1])


def test_planes_agree_with_the_single_plane_layout() -> None:
    img = RNG.integers(0, 256, (1, 12, 8, 1)).astype(np.float32)
    y, chroma = img[:, :8], img[:, 8:]
    uv = chroma.reshape(1, 4, 4, 2)
    np.testing.assert_array_equal(_run("nv12_to_rgb", [img]), _run("nv12_to_rgb", [y, uv]))
    u, v = chroma.reshape(1, 2, 4, 4)[:, 0, ..., None], chroma.reshape(1, 2, 4, 4)[:, 1, ..., None]
    np.testing.assert_array_equal(_run("i420_to_bgr", [img]), _run("i420_to_bgr", [y, u, v]))


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValidationError, match="divisible by 3"):
        ops.nv12_to_rgb(ops.parameter([1, 5, 4, 1], ov.Type.u8))
    with pytest.raises(ValidationError, match="1 channel"):
        ops.nv12_to_rgb(ops.parameter([1, 6, 4, 3], ov.Type.u8))
    with pytest.raises(ValidationError, match="u8 or floating point"):
        ops.i420_to_rgb(ops.parameter([1, 6, 4, 1], ov.Type.i32))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_matches_openvino(name: str, dtype: type) -> None:
    ovr = pytest.importorskip("openvino")
    import openvino.opset8 as oops

    img = RNG.integers(0, 256, (2, 6, 8, 1)).astype(dtype)
    p = oops.parameter(list(img.shape), ovr.Type.u8 if dtype == np.uint8 else ovr.Type.f32)
    theirs = ovr.Core().compile_model(ovr.Model([getattr(oops, name)(p)], [p]), "CPU")([img])[0]
    q = ops.parameter(list(img.shape), ov.Type(img.dtype))
    ours = ov.Core().compile_model(ov.Model([getattr(ops, name)(q)], [q]), "CPU")([img])[0]
    np.testing.assert_allclose(ours.astype(np.float32), theirs, atol=1e-4)
