"""``vinerun quantize``: post-training int8 quantization of a model with calibration samples from an .npz file.

    vinerun quantize -m model.onnx --data samples.npz -o model_int8.xml
    vinerun quantize -m model.xml --data samples.npz -o q.xml --preset mixed --subset-size 100 \\
        --ignored-scope-names head/MatMul
    vinerun quantize -m llm.onnx -o llm_int4.xml --compress-weights int4_sym --group-size 64

The .npz holds one array per model input, named as the input, with the samples stacked on a first axis:
``x`` of shape ``[N, 1, 3, 224, 224]`` gives N samples of ``[1, 3, 224, 224]``. A single-input model also takes
an .npz with one unnamed array (``arr_0``). openvino reads the IR written here too.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from vinerun.errors import VinerunError


class QuantizeArgumentError(VinerunError, ValueError):
    """A quantize flag or the calibration file cannot be used; the message names which and why."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("quantize", help="quantize a model to int8 (or compress its weights) and save it as IR",
                       description="Post-training quantization (like nncf.quantize): FakeQuantize nodes placed "
                                   "from calibration statistics, saved as OpenVINO IR that vinerun and openvino "
                                   "run in int8. With --compress-weights only, no data is needed.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="The .npz holds, per model input, an array named as the input with the samples "
                              "stacked on a new first axis ([N, *input_shape]).")
    p.add_argument("-m", "--model", required=True, metavar="PATH", help="the model to quantize: .onnx or .xml")
    p.add_argument("--data", metavar="NPZ", help="calibration samples (.npz, see below); needed unless only "
                                                 "--compress-weights is given")
    p.add_argument("-o", "--output", required=True, metavar="XML", help="the IR to write (.xml, plus .bin)")
    p.add_argument("--preset", choices=["performance", "mixed"], default=None,
                   help="performance: symmetric activations (default); mixed: asymmetric activations")
    p.add_argument("--subset-size", type=int, default=300, metavar="N",
                   help="calibration samples used for statistics (default: 300)")
    p.add_argument("--ignored-scope-names", nargs="+", default=[], metavar="NAME",
                   help="layers (friendly names) to leave in float")
    p.add_argument("--ignored-scope-types", nargs="+", default=[], metavar="TYPE",
                   help="op types to leave in float, e.g. MatMul")
    p.add_argument("--no-bias-correction", action="store_true", help="skip fast bias correction")
    p.add_argument("--model-type", choices=["transformer"], default=None, help="transformer: NNCF's scheme")
    p.add_argument("--compress-weights", choices=["int8_sym", "int8_asym", "int4_sym", "int4_asym"],
                   metavar="MODE", help="compress MatMul / embedding weights instead (int8_sym, int8_asym, "
                                        "int4_sym, int4_asym); with --data, after quantizing")
    p.add_argument("--group-size", type=int, default=None, metavar="G",
                   help="int4 modes: weights per scale along the input axis (default 128; -1: per channel)")
    p.add_argument("--ratio", type=float, default=None, help="int4 modes: share of the weights in 4 bits")
    p.add_argument("--progress", action="store_true", help="always draw the progress bar (default: on a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vinerun.quantization import (
        AdvancedQuantizationParameters,
        Dataset,
        IgnoredScope,
        QuantizationError,
        compress_weights,
        quantize,
    )
    from vinerun.runtime.core import Core
    from vinerun.runtime.model_io import save_model

    start = time.perf_counter()
    if not Path(args.model).is_file():
        raise QuantizeArgumentError(f"-m/--model: {args.model} does not exist")
    if args.data is None and args.compress_weights is None:
        raise QuantizeArgumentError("--data is required to quantize (or give --compress-weights MODE alone)")
    if args.subset_size < 1:
        raise QuantizeArgumentError(f"--subset-size must be at least 1, got {args.subset_size}")
    model = Core().read_model(args.model)
    ignored = IgnoredScope(names=list(args.ignored_scope_names), types=list(args.ignored_scope_types))
    try:
        if args.data is not None:
            samples = load_samples(args.data, model)
            model = quantize(model, Dataset(samples), preset=args.preset, subset_size=args.subset_size,
                             ignored_scope=ignored, fast_bias_correction=not args.no_bias_correction,
                             model_type=args.model_type,
                             advanced_parameters=AdvancedQuantizationParameters(
                                 show_progress=True if args.progress else None))
            ignored = IgnoredScope(names=list(args.ignored_scope_names), types=list(args.ignored_scope_types),
                                   validate=False)
        if args.compress_weights:
            model = compress_weights(model, mode=args.compress_weights, group_size=args.group_size,
                                     ratio=args.ratio, ignored_scope=ignored)
    except QuantizationError as e:
        raise QuantizeArgumentError(str(e)) from None
    out = Path(args.output)
    out = out if out.suffix == ".xml" else out.with_name(out.name + ".xml")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        save_model(model, out, compress_to_fp16=False)
    except OSError as e:
        raise QuantizeArgumentError(f"-o/--output: cannot write {out}: {e.strerror}") from None
    fqs = sum(n.type_name == "FakeQuantize" for n in model.get_ordered_ops())
    print(f"vinerun quantize: {args.model} -> {out} ({fqs} FakeQuantize) in {time.perf_counter() - start:.2f} s")
    return 0


def load_samples(path: str, model: Any) -> list[dict[str, np.ndarray]]:
    """The calibration samples of an .npz, checked against the model's inputs (names, ranks, static dims)."""
    try:
        npz = np.load(path)
    except (OSError, ValueError) as e:
        raise QuantizeArgumentError(f"--data: cannot read {path} as .npz: {e}") from None
    arrays = {k: npz[k] for k in npz.files}
    inputs = model.inputs
    names = [i.get_any_name() for i in inputs]
    if len(inputs) == 1 and list(arrays) == ["arr_0"]:
        arrays = {names[0]: arrays["arr_0"]}
    missing = [n for n in names if n not in arrays]
    if missing:
        raise QuantizeArgumentError(f"--data: {path} has no array for model input(s) {missing} "
                                    f"(it has {sorted(arrays)}; the model's inputs are {names})")
    counts = set()
    for port, name in zip(inputs, names, strict=True):
        arr = arrays[name]
        shape = port.get_partial_shape()
        if shape.rank.is_static:
            rank = shape.rank.get_length()
            if arr.ndim != rank + 1:
                raise QuantizeArgumentError(
                    f"--data: '{name}' has shape {list(arr.shape)}; expected [N, *{shape}] (samples stacked on "
                    f"a first axis, {rank + 1} dims), got {arr.ndim} dims")
            for axis, dim in enumerate(shape):
                if dim.is_static and dim.get_length() != arr.shape[axis + 1]:
                    raise QuantizeArgumentError(
                        f"--data: '{name}' sample shape {list(arr.shape[1:])} does not fit the input shape "
                        f"{shape} (dimension {axis})")
        counts.add(arr.shape[0])
    if len(counts) != 1:
        raise QuantizeArgumentError(f"--data: the inputs hold different numbers of samples {sorted(counts)}")
    return [{n: arrays[n][i] for n in names} for i in range(counts.pop())]
