"""``vinerun speech``: Kaldi ark / npz files, the error report, and the CLI on a generated speech model."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import InputError
from vinerun.models.speech import speech_model
from vinerun.tools.cli import main
from vinerun.tools.speech import device_and_config, parse_scale_factors, sample_scale_factor
from vinerun.tools.speech_io import read_ark, read_utterances, write_ark, write_utterances
from vinerun.tools.speech_report import ErrorStats, compare_scores

RNG = np.random.default_rng(0)
UTTERANCES = {"utt0": RNG.standard_normal((12, 40)).astype(np.float32),
              "utt1": RNG.standard_normal((7, 40)).astype(np.float32)}


# --- files ---------------------------------------------------------------------------------------------

def test_ark_round_trip_and_bytes() -> None:
    buf = io.BytesIO()
    write_ark(buf, {"a": np.array([[1.0, 2.0, 3.0]], np.float32)})
    assert buf.getvalue() == (b"a \0BFM \x04" + struct.pack("<i", 1) + b"\x04" + struct.pack("<i", 3)
                              + np.array([1, 2, 3], "<f4").tobytes())
    buf = io.BytesIO()
    write_ark(buf, UTTERANCES)
    buf.seek(0)
    back = read_ark(buf)
    assert list(back) == ["utt0", "utt1"]
    for k, v in UTTERANCES.items():
        np.testing.assert_array_equal(back[k], v)


def test_ark_reads_double_matrices_and_the_cpp_writers_form_without_space() -> None:
    data = (b"x\0BDM \x04" + struct.pack("<i", 2) + b"\x04" + struct.pack("<i", 1)
            + np.array([0.5, -2.0], "<f8").tobytes())
    (m,) = read_ark(io.BytesIO(data)).values()
    assert m.dtype == np.float32 and m.tolist() == [[0.5], [-2.0]]


@pytest.mark.parametrize(("data", "message"), [
    (b"x \0BCM \x04", "compressed 'CM' matrices are not supported"),
    (b"x  [ 1 2 ]\n", "text arks are not supported"),
    (b"x \0BFM \x04" + struct.pack("<i", 2) + b"\x04" + struct.pack("<i", 2) + b"\0" * 8, "truncated ark"),
])
def test_bad_arks_are_refused_with_a_reason(data: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_ark(io.BytesIO(data))


def test_npz_round_trip(tmp_path: Path) -> None:
    write_utterances(tmp_path / "u.npz", UTTERANCES)
    back = read_utterances(tmp_path / "u.npz")
    assert set(back) == set(UTTERANCES)
    np.testing.assert_array_equal(back["utt1"], UTTERANCES["utt1"])
    with pytest.raises(InputError, match="unsupported extension '.wav'"):
        write_utterances(tmp_path / "u.wav", UTTERANCES)


# --- report --------------------------------------------------------------------------------------------

def test_error_report_by_hand() -> None:
    ref = np.array([[1.0, 2.0], [0.0, 0.0]])
    out = np.array([[1.5, 2.0], [0.0, -1.0]])          # e = [[-0.5, 0], [0, 1]]
    s = compare_scores(ref, out)
    assert s.max_error == 1.0 and s.avg_error == 0.375
    assert s.rms_error == pytest.approx((np.sqrt(0.125) + np.sqrt(0.5)) / 2)   # per-frame RMS, averaged
    assert s.utterance_rms == pytest.approx(np.sqrt(1.25 / 4))
    assert s.stdev_error == pytest.approx(np.sqrt(1.25 / 4 - 0.375 ** 2))
    total = ErrorStats().merge(s).merge(compare_scores(np.zeros((1, 2)), np.full((1, 2), 3.0)))
    assert total.max_error == 3.0 and total.frames == 3 and total.avg_error == pytest.approx((1.5 + 6) / 6)
    with pytest.raises(InputError, match="reference scores have shape"):
        compare_scores(ref, out[:1])


def test_scale_factor_flags() -> None:
    assert parse_scale_factors("2048", ["a", "b"]) == {"a": 2048.0, "b": 2048.0}
    assert parse_scale_factors("b=10,a=2", ["a", "b"]) == {"a": 2.0, "b": 10.0}
    with pytest.raises(InputError, match="must be > 0"):
        parse_scale_factors("a=0", ["a"])
    with pytest.raises(InputError, match="'c' is not an input"):
        parse_scale_factors("c=1", ["a"])
    assert sample_scale_factor(np.array([[0.5, -2.0]])) == 8192.0
    assert sample_scale_factor(np.zeros((2, 2))) == 1.0


def test_device_flag_maps_to_gna_mode_and_hetero_properties() -> None:
    args = main_args("-d", "GNA_SW_FP32", "-qb", "8", "-exec_target", "GNA_TARGET_3_0")
    device, config = device_and_config(args, {"feats": 2.0})
    assert device == "GNA" and config["GNA_DEVICE_MODE"] == "GNA_SW_FP32"
    assert config["INFERENCE_PRECISION_HINT"] == "i8" and config["GNA_SCALE_FACTOR_PER_INPUT"] == {"feats": 2.0}
    assert config["GNA_HW_EXECUTION_TARGET"] == "GNA_TARGET_3_0"
    device, config = device_and_config(main_args("-d", "HETERO:GNA,CPU"), {})
    assert device == "HETERO:GNA,CPU" and config["DEVICE_PROPERTIES"]["GNA"]["GNA_DEVICE_MODE"] == "GNA_AUTO"


def main_args(*flags: str):
    from vinerun.tools.cli import build_parser
    return build_parser().parse_args(["speech", "-i", "x.ark", "-m", "m.xml", *flags])


# --- the CLI -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("speech")
    ov.save_model(speech_model(features=40, hidden=32, outputs=16, lstm=8), str(d / "m.xml"), compress_to_fp16=False)
    write_ark(d / "in.ark", UTTERANCES)
    write_utterances(d / "in.npz", UTTERANCES)
    x = ops.parameter([1, 40], name="feats")
    w = ops.constant((RNG.standard_normal((40, 16)) * 0.2).astype(np.float32))
    ov.save_model(ov.Model([ops.sigmoid(ops.matmul(x, w, False, False), name="scores")], [x], "dnn"),
                  str(d / "dnn.xml"), compress_to_fp16=False)
    return d


def speech(capsys: pytest.CaptureFixture, *argv: str) -> str:
    capsys.readouterr()
    assert main(["speech", *[str(a) for a in argv]]) == 0
    return capsys.readouterr().out


def test_exact_against_fp32_reference_scores(files: Path, capsys: pytest.CaptureFixture) -> None:
    speech(capsys, "-m", files / "m.xml", "-i", files / "in.ark", "-d", "GNA_SW_FP32", "-o", files / "ref.ark")
    out = speech(capsys, "-m", files / "m.xml", "-i", files / "in.npz", "-d", "GNA_SW_EXACT", "-r",
                 files / "ref.ark", "-o", files / "exact.npz", "-pc")
    assert "Using scale factor of" in out and out.count("Frames in utterance:") == 2
    assert "Total scoring cycles (estimate):" in out
    maxima = [float(line.split(":")[1]) for line in out.splitlines() if "max error:" in line]
    avgs = [float(line.split(":")[1]) for line in out.splitlines() if "avg error:" in line]
    assert len(maxima) == 3 and all(0 < m < 0.15 for m in maxima) and all(0 < a < 0.03 for a in avgs)
    # the scores file holds what the device computes, frame by frame with the state reset per utterance
    sf = 16384 / float(np.abs(UTTERANCES["utt0"]).max())
    compiled = ov.Core().compile_model(str(files / "m.xml"), "GNA", {"GNA_SCALE_FACTOR_PER_INPUT": {"feats": sf}})
    request = compiled.create_infer_request()
    written = read_utterances(files / "exact.npz")
    for key, x in UTTERANCES.items():
        request.reset_state()
        expect = np.concatenate([np.asarray(request.infer([f[None]])[0]) for f in x])
        np.testing.assert_array_equal(written[key], expect)


def test_compare_mode_reports_i16_i8_and_fp32(files: Path, capsys: pytest.CaptureFixture) -> None:
    out = speech(capsys, "-m", files / "m.xml", "-i", files / "in.ark", "-compare")
    total = out.split("Total over 2 utterance(s)")[1].splitlines()
    rows = {tuple(line[:36].split()[i] for i in (0, -1)): [float(v) for v in line[36:].split()]
            for line in total if line.startswith("GNA_SW")}
    assert set(rows) == {("GNA_SW_FP32", "i16"), ("GNA_SW_FP32", "i8"), ("GNA_SW_EXACT", "i8")}
    for values in rows.values():
        assert 0 < values[0] < 0.15 and 0 < values[1] < 0.03


def test_export_then_import_gives_the_same_scores(files: Path, capsys: pytest.CaptureFixture) -> None:
    common = ["-i", files / "in.ark", "-d", "GNA_SW_EXACT", "-sf", "4096"]
    speech(capsys, "-m", files / "m.xml", *common, "-o", files / "a.ark")
    assert "Exported" in speech(capsys, "-m", files / "m.xml", *common, "-wg", files / "m.blob")
    speech(capsys, "-rg", files / "m.blob", "-i", files / "in.ark", "-d", "GNA_SW_EXACT", "-o", files / "b.ark")
    a, b = read_ark(files / "a.ark"), read_ark(files / "b.ark")
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_batch_and_context_window(files: Path, capsys: pytest.CaptureFixture) -> None:
    common = ["-m", files / "dnn.xml", "-i", files / "in.ark", "-d", "GNA_SW_EXACT", "-sf", "4096"]
    speech(capsys, *common, "-o", files / "bs1.ark")
    speech(capsys, *common, "-bs", "4", "-o", files / "bs4.ark")
    speech(capsys, *common, "-cw_l", "1", "-cw_r", "1", "-bs", "4", "-o", files / "cw.ark")
    one, four, cw = (read_ark(files / f"{n}.ark") for n in ("bs1", "bs4", "cw"))
    for key in one:
        np.testing.assert_array_equal(four[key], one[key])   # 12 and 7 frames: the last batch is padded
        # the first cw_l + cw_r outputs are dropped and the last frame repeated
        np.testing.assert_array_equal(cw[key][:-2], one[key][2:])
        np.testing.assert_array_equal(cw[key][-2:], np.repeat(one[key][-1:], 2, axis=0))


def test_progress_bar_on_request(files: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    assert main(["speech", "-m", str(files / "dnn.xml"), "-i", str(files / "in.ark"), "-d", "GNA", "-progress"]) == 0
    err = capsys.readouterr().err
    assert "100%" in err and "12/12 frames" in err and "7/7 frames" in err


@pytest.mark.parametrize(("flags", "message"), [
    (["-q", "dynamic"], "-q dynamic is not supported"),
    (["-q", "user"], "-q user needs the scale factors"),
    (["-we", "x.bin"], "embedded GNA firmware export"),
    (["-layout", "NCHW"], "NC"),
    (["-bs", "9"], "-bs must be 1..8"),
    (["-sf", "feats=-1"], "must be > 0"),
])
def test_bad_flags(files: Path, capsys: pytest.CaptureFixture, flags: list[str], message: str) -> None:
    assert main(["speech", "-m", str(files / "m.xml"), "-i", str(files / "in.ark"), "-d", "GNA", *flags]) == 1
    assert message in capsys.readouterr().err
