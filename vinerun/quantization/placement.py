"""Where the activation FakeQuantize nodes go, by NNCF's rules for the OpenVINO CPU target.

1. An op whose inputs can be quantized (Convolution, MatMul, a residual Add, pooling...) asks for an 8-bit
   quantizer on each of its activation inputs. Element-wise ops ask only when both inputs are activations
   (``x * const`` is a scale-shift that folds into the neighbouring layer, as NNCF's fused patterns).
2. A request moves up through quantization-agnostic ops (MaxPool, Reshape, Transpose...) when every
   reader of that op's output asked for one, so ``ReLU -> FQ -> MaxPool -> Conv`` rather than after the pool.
3. Requests on one tensor become one FakeQuantize: on the output (``<producer>/fq_output_<i>``) when every
   reader asked, or the others are scale-shifts (element-wise with a constant, as ``x + 3`` of a hard-swish: NNCF
   lets them read the quantized tensor too, so the producer's int8 output serves every reader); otherwise shared
   by the readers that did (``<consumer>/fq_input_<port>``).

Depthwise convolutions take per-channel activation ranges (NNCF's ``q8_a_ch``); everything else per-tensor.

>>> import numpy as np, vinerun as ov
>>> x = ov.opset1.parameter([1, 4], ov.Type.f32, name="x")
>>> y = ov.opset1.matmul(ov.opset1.relu(x, name="act"), np.ones((4, 2), np.float32), False, False)
>>> [p.name for p in find_activation_points(GraphInfo(ov.Model([y], [x])), IgnoredScope())]
['act/fq_output_0']
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vinerun.ir import Node, Output
from vinerun.quantization.graph import SHAPE_READERS, GraphInfo
from vinerun.quantization.parameters import IgnoredScope, ModelType

#: ops that ask for quantized activation inputs -> which inputs (None: every activation input)
QUANTIZABLE_INPUTS: dict[str, tuple[int, ...] | None] = {
    "Convolution": (0,), "GroupConvolution": (0,), "ConvolutionBackpropData": (0,),
    "GroupConvolutionBackpropData": (0,), "MatMul": None,
    "Add": None, "Subtract": None, "Multiply": None, "Divide": None, "SquaredDifference": None,
    "AvgPool": (0,), "AdaptiveAvgPool": (0,), "ReduceMean": (0,), "MVN": (0,), "NormalizeL2": (0,),
    "Interpolate": (0,), "GroupNormalization": (0,),
}
#: element-wise ops: quantized only when every input is an activation
ELEMENTWISE = {"Add", "Subtract", "Multiply", "Divide", "SquaredDifference"}
#: NNCF's transformer scheme leaves these in float
TRANSFORMER_FLOAT = {"Add", "Subtract", "Multiply", "Divide", "SquaredDifference", "ReduceMean", "MVN",
                     "GroupNormalization", "NormalizeL2"}
#: ops a quantizer moves up through (their output is a selection or rearrangement of their first input)
AGNOSTIC = {"MaxPool", "AdaptiveMaxPool", "ReduceMax", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Tile",
            "StridedSlice", "ShuffleChannels", "Broadcast", "Pad", "ConvertLike", "Gather", "GatherND",
            "GatherElements", "DepthToSpace", "SpaceToDepth", "BatchToSpace", "SpaceToBatch"}
#: agnostic ops that keep the channel axis, so a per-channel request stays per-channel above them
KEEPS_CHANNELS = {"MaxPool", "Pad", "ConvertLike"}


@dataclass
class ActivationPoint:
    """One activation FakeQuantize to insert: on ``output``, read by ``consumers``."""

    output: Output
    consumers: list[tuple[Node, int]]
    per_channel: bool
    name: str = ""
    at_output: bool = False


@dataclass
class _Request:
    consumers: list[tuple[Node, int]] = field(default_factory=list)
    per_channel: list[bool] = field(default_factory=list)


def is_depthwise(node: Node) -> bool:
    """A GroupConvolution with one input and one output channel per group."""
    if node.type_name != "GroupConvolution":
        return False
    shape = node.get_input_partial_shape(1)
    return shape.rank.is_static and shape.rank.get_length() >= 3 and shape[1] == 1 and shape[2] == 1


def find_activation_points(info: GraphInfo, ignored: IgnoredScope,
                           model_type: ModelType | None = None) -> list[ActivationPoint]:
    """Every activation quantizer of the model, in graph order."""
    requests: dict[tuple[int, int], tuple[Output, _Request]] = {}

    def ask(out: Output, consumer: Node, port: int, per_channel: bool) -> None:
        _, req = requests.setdefault((id(out.node), out.index), (out, _Request()))
        req.consumers.append((consumer, port))
        req.per_channel.append(per_channel)

    for node in info.ops:
        ports = QUANTIZABLE_INPUTS.get(node.type_name, ())
        if ports == () or ignored.matches(node.friendly_name, node.type_name):
            continue
        if model_type == ModelType.TRANSFORMER and node.type_name in TRANSFORMER_FLOAT:
            continue
        acts = [i for i, o in enumerate(node.input_values()) if o is not None and info.is_activation(o)]
        if node.type_name in ELEMENTWISE and len(acts) < node.get_input_size():
            continue
        for i in (acts if ports is None else [p for p in ports if p in acts]):
            ask(node.input_value(i), node, i, is_depthwise(node))

    _propagate(info, ignored, requests, ask)
    points = []
    for out, req in requests.values():
        readers = [c for c in info.consumers(out) if c[0].type_name not in SHAPE_READERS]
        asked = {(id(n), p) for n, p in req.consumers}
        others = [(n, p) for n, p in readers if (id(n), p) not in asked]
        at_output = all(_is_scale_shift(info, n) for n, _ in others)
        consumers = req.consumers + others if at_output else req.consumers
        first, port = req.consumers[0]
        name = (f"{out.node.friendly_name}/fq_output_{out.index}" if at_output
                else f"{first.friendly_name}/fq_input_{port}")
        points.append(ActivationPoint(out, consumers, all(req.per_channel), name, at_output))
    order = {id(n): i for i, n in enumerate(info.ops)}
    return sorted(points, key=lambda p: (order[id(p.output.node)], p.output.index))


def _is_scale_shift(info: GraphInfo, node: Node) -> bool:
    """An element-wise op whose other inputs are constants (``x + 3``, ``x * scale``)."""
    return (node.type_name in ELEMENTWISE
            and sum(info.is_activation(o) for o in node.input_values() if o is not None) == 1)


def _propagate(info: GraphInfo, ignored: IgnoredScope, requests: dict, ask) -> None:  # noqa: ANN001
    """Move requests up through agnostic ops until none moves (rule 2)."""
    moved = True
    while moved:
        moved = False
        for key, (out, req) in list(requests.items()):
            node = out.node
            if (node.type_name not in AGNOSTIC or out.index != 0
                    or any(info.consumers(o) for o in node.outputs()[1:])
                    or ignored.matches(node.friendly_name, node.type_name)
                    or not info.is_activation(node.input_value(0))):
                continue
            readers = {(id(n), p) for n, p in info.consumers(out) if n.type_name not in SHAPE_READERS}
            if not readers <= {(id(n), p) for n, p in req.consumers}:
                continue
            del requests[key]
            ask(node.input_value(0), node, 0, all(req.per_channel) and node.type_name in KEEPS_CHANNELS)
            moved = True
