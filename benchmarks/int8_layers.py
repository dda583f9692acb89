"""Where vinerun's int8 numbers part from openvino's, layer by layer: the model cut at each activation
FakeQuantize (an NNCF IR), that quantized tensor read by an int8 identity 1x1 convolution (so that both runtimes
hand it over as they do between layers, not as a model output), run on both with the same inputs; prints the share
of its elements that differ and the largest difference, in steps of its grid. The first layer that differs is where
the arithmetic does; float ties then spread from layer to layer.

    python benchmarks/int8_layers.py resnet50-nncf --folder /tmp/zoo               # every activation FakeQuantize
    python benchmarks/int8_layers.py resnet50-nncf --folder /tmp/zoo --layers 1 6 70 --inputs 4
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_models import INT8_MODELS, perturbed_feeds  # noqa: E402

F32 = {"INFERENCE_PRECISION_HINT": "f32"}  # the identity convolution's f32 output stays exact in both


def activation_quantizers(model) -> list[str]:
    """Names of the FakeQuantize nodes on activations (not on constant weights), in the model's order."""
    constant: dict[str, bool] = {}  # per node: whether it computes from constants only
    for op in model.get_ordered_ops():
        inputs = [v.get_node().get_friendly_name() for v in op.input_values()]
        constant[op.get_friendly_name()] = op.get_type_name() == "Constant" or \
            (op.get_type_name() != "Parameter" and bool(inputs) and all(constant[i] for i in inputs))
    return [op.get_friendly_name() for op in model.get_ordered_ops() if op.get_type_name() == "FakeQuantize" and
            not constant[op.input_value(0).get_node().get_friendly_name()]]


def cut_at(openvino, path: str, name: str, out: str) -> np.ndarray:
    """Writes to ``out`` the model at ``path`` cut at FakeQuantize ``name`` and read by an identity int8 1x1
    convolution; returns that FakeQuantize's step (its output range / 255; per channel where its limits are)."""
    from openvino import opset13 as ops

    model = openvino.Core().read_model(path)
    fq = next(op for op in model.get_ordered_ops() if op.get_friendly_name() == name)
    channels = fq.get_output_partial_shape(0)[1].get_length()
    eye = ops.convert(ops.constant(np.eye(channels, dtype=np.int8)[:, :, None, None]), openvino.Type.f32)
    weights = ops.multiply(eye, ops.constant(np.ones((channels, 1, 1, 1), np.float32)))
    conv = ops.convolution(fq.output(0), weights, [1, 1], [0, 0], [0, 0], [1, 1])
    openvino.save_model(openvino.Model([ops.result(conv)], model.get_parameters(), "cut"), out,
                        compress_to_fp16=False)
    low, high = (np.asarray(fq.input_value(i).get_node().get_data(), np.float32) for i in (3, 4))
    step = (high - low) / np.float32(255)
    return step.reshape(1, -1, 1, 1) if step.size > 1 else step.reshape(())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", choices=sorted(name for name in INT8_MODELS if name.endswith("-nncf")))
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun-bench"))
    p.add_argument("--layers", type=int, nargs="*", help="indexes into the activation FakeQuantize list (all)")
    p.add_argument("--inputs", type=int, default=3, help="the model's input and this many - 1 noisier copies")
    args = p.parse_args(argv)

    import openvino

    import vinerun

    spec = INT8_MODELS[args.model]
    path = spec.build(args.folder)
    feeds = perturbed_feeds(spec.inputs(), args.inputs, 0.3, seed=7)
    names = activation_quantizers(openvino.Core().read_model(path))
    chosen = args.layers if args.layers else range(len(names))
    print(f"{args.model}: {len(names)} activation FakeQuantize nodes; per input: elements that differ (largest, in "
          "steps)")
    with tempfile.TemporaryDirectory() as tmp:
        for i in chosen:
            out = os.path.join(tmp, f"cut{i}.xml")
            step = cut_at(openvino, path, names[i], out)
            ours = vinerun.Core().compile_model(out, "CPU", F32)
            theirs = openvino.Core().compile_model(out, "CPU", F32)
            cells = []
            for feed in feeds:
                a, b = (np.rint(np.asarray(c(feed)[0], np.float64) / step) for c in (ours, theirs))
                cells.append(f"{np.mean(a != b) * 100:.4f}% ({np.abs(a - b).max():.0f})")
            print(f"{i:3d} {names[i]:45s} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
