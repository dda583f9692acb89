"""Which ops the CPU plugin runs in bf16 when the effective ``INFERENCE_PRECISION_HINT`` is bf16.

Anchors, lowered whenever their float inputs are f32: the ops oneDNN computes natively in bf16
(convolutions, matrix products, attention, LSTMs that run on oneDNN), with their constant filters and weights
converted once at compile time and prepacked by the kernels (an LSTM's weights: by its kernel). Followers,
lowered when a float input comes from a lowered op, so that values stay bf16 between the anchors: element-wise
arithmetic and activations, pooling, views and data movement, Softmax, LayerNorm (statistics in f32 inside the
kernel), mean reductions and whole-factor nearest upsampling. A bias, a Swish beta, LayerNorm's gamma and beta
and a fused scale-shift's scale and shift stay f32 (the kernels apply them in f32). Everything else computes in
f32 behind a Convert, and model outputs keep their declared types.
"""

from __future__ import annotations

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.plugins.cpu.kernels.resample_dnnl import half_pixel_linear, whole_factor_nearest
from vinerun.plugins.cpu.kernels.rnn import lstm_weight_inputs, runs_lstm_on_dnnl
from vinerun.transformations.precision import EnforceInferencePrecision, PrecisionPolicy

#: the accuracy bf16 lowering is held to: the largest error of a bf16 result is within this fraction of the f32
#: result's largest magnitude (measured 0.6-1.4% on ResNet-50, MobileNetV2 and a 6-layer BERT encoder, where
#: openvino's bf16 is 0.9-1.1%; each bf16 op rounds to 8 significant bits, a relative 2**-9)
BF16_TOLERANCE = 2**-5

ANCHORS = frozenset({"FusedConvolution", "Convolution", "GroupConvolution", "FusedMatMul", "MatMul",
                     "FusedAttention", "ConvolutionBackpropData", "GroupConvolutionBackpropData",
                     "LSTM", "LSTMSequence"})
#: anchors lowered only where the oneDNN kernel takes them (:func:`runs_lstm_on_dnnl`)
RECURRENT = frozenset({"LSTM", "LSTMSequence"})
FOLLOWERS = frozenset({
    "Add", "Subtract", "Multiply", "Maximum", "Minimum",
    "Relu", "Clamp", "Sigmoid", "Tanh", "Gelu", "Swish", "HSwish", "Mish", "Elu", "PRelu",
    "MaxPool", "AvgPool", "ReduceMean", "ReduceMax", "Softmax", "FusedLayerNorm",
    "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "VariadicSplit", "Interpolate", "Resize",
    "Slice", "ShuffleChannels", "HardSigmoid", "FusedScaleShift", "ReplaceNaN",
})
#: followers lowered only where the oneDNN kernel takes them (:func:`has_bf16_kernel`)
RESAMPLERS = frozenset({"Interpolate", "Resize"})
#: ops that hand an int8 model's values to f32 ops (a DequantizeLinear, an int8 layer with an f32 output)
INT8_OUTSIDE = frozenset({"DequantizeLinear", "QuantizedConvolution", "QuantizedMatMul"})
#: fused ops whose post-op operands other than the residual ("sum") stay f32
_FUSED = frozenset({"FusedConvolution", "FusedMatMul"})


def wide_inputs(node: Node) -> frozenset[int]:
    """Inputs of a lowered node that keep f32: fused biases and activation parameters, LayerNorm's and a fused
    scale-shift's scales and shifts (a BatchNorm before a convolution, DenseNet's: its scale and shift in bf16
    moved DenseNet-121's bf16 output 0.038 from f32 where openvino's moves 0.029; in f32, 0.027)."""
    if node.type_name in _FUSED:
        steps = getattr(node, "steps", ())
        return frozenset(s.input_index for s in steps if s.input_index is not None and s.kind != "sum")
    if node.type_name in ("FusedLayerNorm", "FusedScaleShift"):
        return frozenset({1, 2})
    if node.type_name in RECURRENT:  # the kernel converts its weights once; the bias stays f32 in oneDNN
        return frozenset(lstm_weight_inputs(node))
    return frozenset()


def has_bf16_kernel(node: Node) -> bool:
    """Input 0 has a static rank (the bf16 kernels need it; others would run the NumPy reference in bf16), an
    upsampling is one the oneDNN kernel takes (whole-factor nearest, half-pixel bilinear), and an anchor's data is
    not an int8 model's dequantized tensor."""
    if node.get_input_size() == 0 or not node.get_input_partial_shape(0).rank.is_static:
        return False
    if node.type_name in ANCHORS and node.input_value(0).node.type_name in INT8_OUTSIDE:
        return False  # an f32 island of an int8 model: converting in and out would cost more than bf16 saves
    if node.type_name in RECURRENT:
        return runs_lstm_on_dnnl(node)
    return node.type_name not in RESAMPLERS or whole_factor_nearest(node) or half_pixel_linear(node)


POLICY = PrecisionPolicy(anchors=ANCHORS, followers=FOLLOWERS, wide_inputs=wide_inputs, accepts=has_bf16_kernel)


def lower_precision(model: Model, precision: Type) -> None:
    """Lower ``model`` (in place, after the fusions) to ``precision`` where the CPU computes it: bf16 only;
    f32, ``dynamic`` and f16 (no fast CPU kernels) leave the model as it is."""
    if precision == Type.bf16:
        EnforceInferencePrecision(Type.bf16, POLICY).run(model, check_graph=False)
