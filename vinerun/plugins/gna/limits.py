"""GNA layer limits per compile target (specs/gna.md §4), checked on a model before compilation.

:func:`check_model` walks the graph and raises :class:`GNALimitError` at the first layer a target
cannot run; the message is the plugin's wording where the spec quotes one, followed by the compile
target and the limit, e.g.::

    topology with layer: fc, type: MatMul, and batch size(9) not supported
    (compile target GNA_TARGET_3_5: fully connected batch 1..8)

>>> check_model(model, HWGeneration.GNA_3_0)          # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from vinerun.errors import UnsupportedOpError
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ir.types import Type
from vinerun.properties.intel_gna import HWGeneration


class GNALimitError(UnsupportedOpError):
    """A layer the compile target cannot run (the message names the layer, the limit and the target)."""


@dataclass(frozen=True)
class Conv2DLimits:
    """2D convolution limits of one generation (None: no such limit)."""

    input_h: tuple[int, int]
    input_w: tuple[int, int]
    channels_i16: tuple[int, int]
    channels_i8: tuple[int, int]
    channels_multiple: int
    kernels: tuple[int, int]
    kernels_multiple: int
    #: (max channels, max kernel height, max kernel width) rows, by precision; first row with C <= max applies
    kernel_by_channels: dict[str, tuple[tuple[int, int, int], ...]] | None
    kernel_hw: tuple[int, int] | None
    stride_le_kernel: bool
    pool_square_max: int | None
    pool_max: int | None
    symmetric_padding: bool


@dataclass(frozen=True)
class TargetLimits:
    """Everything checked for one compile target."""

    target: HWGeneration
    max_layers: int
    max_memory_bytes: int
    fc_max_batch: int
    max_vector_length: int
    conv1d_filters: tuple[int, int]
    conv1d_filters_multiple: int
    #: max coefficients per filter (C_in x kernel width, padded to 8), by precision
    conv1d_coefficients: dict[str, int]
    conv1d_max_pool: int
    conv2d: Conv2DLimits | None
    transpose_max: int = 65528
    transpose_min_dim: int = 8


MiB = 1 << 20
_I16_KERNELS_30 = ((48, 7, 7), (64, 7, 5), (80, 7, 4), (120, 7, 3), (384, 7, 1))
_I8_KERNELS_30 = ((96, 7, 7), (136, 7, 5), (168, 7, 4), (240, 7, 3), (384, 7, 2))

LIMITS: dict[HWGeneration, TargetLimits] = {
    HWGeneration.GNA_2_0: TargetLimits(
        HWGeneration.GNA_2_0, max_layers=4096, max_memory_bytes=256 * MiB, fc_max_batch=8,
        max_vector_length=65528, conv1d_filters=(4, 65532), conv1d_filters_multiple=4,
        conv1d_coefficients={"i16": 768, "i8": 768}, conv1d_max_pool=6, conv2d=None),
    HWGeneration.GNA_3_0: TargetLimits(
        HWGeneration.GNA_3_0, max_layers=8192, max_memory_bytes=256 * MiB, fc_max_batch=8,
        max_vector_length=65528, conv1d_filters=(4, 8192), conv1d_filters_multiple=4,
        conv1d_coefficients={"i16": 768, "i8": 768}, conv1d_max_pool=6,
        conv2d=Conv2DLimits(input_h=(16, 384), input_w=(16, 240), channels_i16=(8, 384), channels_i8=(8, 384),
                            channels_multiple=8, kernels=(8, 1024), kernels_multiple=8,
                            kernel_by_channels={"i16": _I16_KERNELS_30, "i8": _I8_KERNELS_30}, kernel_hw=None,
                            stride_le_kernel=True, pool_square_max=3, pool_max=None, symmetric_padding=False)),
    HWGeneration.GNA_3_5: TargetLimits(
        HWGeneration.GNA_3_5, max_layers=8192, max_memory_bytes=256 * MiB, fc_max_batch=8,
        max_vector_length=65528, conv1d_filters=(1, 8192), conv1d_filters_multiple=1,
        conv1d_coefficients={"i16": 2048, "i8": 4096}, conv1d_max_pool=255,
        conv2d=Conv2DLimits(input_h=(1, 65535), input_w=(1, 65535), channels_i16=(1, 1024), channels_i8=(1, 2048),
                            channels_multiple=1, kernels=(1, 8192), kernels_multiple=1, kernel_by_channels=None,
                            kernel_hw=(255, 256), stride_le_kernel=False, pool_square_max=None, pool_max=255,
                            symmetric_padding=True)),
}

#: ops that only move or relabel data (no GNA layer)
NON_FUNCTIONAL = {"Reshape", "Squeeze", "Unsqueeze", "Parameter", "Constant", "Result", "Convert"}
ACTIVATIONS = {"Sigmoid", "Tanh", "Relu", "PRelu", "SoftSign", "Exp", "Log", "Power", "Clamp", "Abs", "Sign",
               "FakeQuantize", "Identity"}
#: ONNX QDQ: a QuantizeLinear -> DequantizeLinear pair is a FakeQuantize; a DequantizeLinear of integer weights folds
QDQ = {"QuantizeLinear", "DequantizeLinear"}
ELTWISE = {"Add", "Subtract", "Multiply"}
SUPPORTED = (NON_FUNCTIONAL | ACTIVATIONS | ELTWISE | QDQ |
             {"MatMul", "Convolution", "MaxPool", "AvgPool", "Concat", "Split", "VariadicSplit", "Slice",
              "StridedSlice", "Transpose", "ReadValue", "Assign", "LSTMCell", "GRUCell", "LSTMSequence"})
INPUT_TYPES = (Type.u8, Type.i16, Type.f32)


def target_name(target: HWGeneration) -> str:
    return target.name.replace("GNA_", "GNA_TARGET_", 1)


class _Checker:
    def __init__(self, model: Model, limits: TargetLimits, precision: str):
        self.model = model
        self.limits = limits
        self.precision = precision
        self.target = target_name(limits.target)

    def fail(self, text: str, limit: str) -> GNALimitError:
        return GNALimitError(f"{text} (compile target {self.target}: {limit})")

    def conv_fail(self, node: Node, what: str, value: int, lo: int, hi: int, extra: str = "") -> GNALimitError:
        return self.fail(f"Layer Convolution2D: {node.friendly_name}:Unsupported {what}, actual value: {value}, "
                         f"valid range [{lo}, {hi}]{extra}", f"2D convolution {what} {lo}..{hi}{extra}")

    # --- helpers -------------------------------------------------------------------------------
    def shape(self, out: Output) -> list[int]:
        ps = out.get_partial_shape()
        if not ps.is_static:
            raise self.fail(f"Layer {out.node.friendly_name} (type {out.node.type_name}) has a dynamic shape {ps}",
                            "GNA needs static shapes; reshape the model first")
        return [d.get_length() for d in ps]

    @staticmethod
    def is_const(out: Output) -> bool:
        node = out.node
        while node.type_name in ("Convert", "Reshape", "Squeeze", "Unsqueeze"):
            node = node.input_value(0).node
        return node.type_name == "Constant"

    def near_edge(self, node: Node) -> bool:
        """Whether ``node`` touches a model input or output through non-functional ops only (runs on CPU)."""
        up = node.input_value(0).node
        while up.type_name in NON_FUNCTIONAL and up.type_name != "Parameter" and up.get_input_size():
            up = up.input_value(0).node
        if up.type_name == "Parameter":
            return True
        frontier = [node]
        while frontier:
            n = frontier.pop()
            for out in n.outputs():
                for target in out.get_target_inputs():
                    t = target.get_node()
                    if t.type_name == "Result":
                        return True
                    if t.type_name in NON_FUNCTIONAL:
                        frontier.append(t)
        return False

    def batch_error(self, node: Node, batch: int, limit: str) -> GNALimitError:
        return self.fail(f"topology with layer: {node.friendly_name}, type: {node.type_name}, and batch "
                         f"size({batch}) not supported", limit)

    # --- model-wide ----------------------------------------------------------------------------
    def run(self) -> None:
        ops = self.model.get_ordered_ops()
        for p in self.model.get_parameters():
            if p.get_element_type() not in INPUT_TYPES:
                raise self.fail(f"The plugin does not support input precision with "
                                f"{p.get_element_type().get_type_name()} format", "inputs are u8, i16 or f32")
        functional = [n for n in ops if n.type_name not in NON_FUNCTIONAL]
        if not functional:
            raise self.fail("Network consists of input layer only (GNA)", "a model needs at least one layer")
        layers = [n for n in functional if n.type_name not in ("ReadValue", "Assign")]
        if len(layers) > self.limits.max_layers:
            raise self.fail(f"The model has {len(layers)} layers", f"at most {self.limits.max_layers} layers")
        memory = self.memory_bytes(ops)
        if memory > self.limits.max_memory_bytes:
            raise self.fail(f"The model needs {memory} bytes of GNA memory",
                            f"model memory at most {self.limits.max_memory_bytes // MiB} MB")
        for node in functional:
            self.check(node)

    def memory_bytes(self, ops: list[Node]) -> int:
        """Quantized weights (precision bytes), constants (2 B) and int16 activations (2 B), estimated."""
        weight_bytes = 1 if self.precision == "i8" else 2
        total = 0
        for node in ops:
            if node.type_name == "Constant":
                size = math.prod(self.shape(node.output(0)))
                consumers = {t.get_node().type_name for t in node.output(0).get_target_inputs()}
                total += size * (weight_bytes if consumers & {"MatMul", "Convolution"} else 2)
            elif node.type_name not in NON_FUNCTIONAL:
                total += sum(2 * math.prod(self.shape(o)) for o in node.outputs())
        return total

    # --- per layer -----------------------------------------------------------------------------
    def check(self, node: Node) -> None:
        t = node.type_name
        if t not in SUPPORTED:
            raise self.fail(f"The plugin does not support layer {node.friendly_name} (type {t})!",
                            "layer type not supported by GNA")
        checks: dict[str, Callable[[Node], None]] = {
            "MatMul": self.check_fc, "Convolution": self.check_conv, "MaxPool": self.check_pool,
            "AvgPool": self.check_pool, "Concat": self.check_concat, "Split": self.check_split,
            "VariadicSplit": self.check_split, "Transpose": self.check_transpose, "ReadValue": self.check_state,
            "Assign": self.check_state, "LSTMCell": self.check_cell, "GRUCell": self.check_cell,
            "LSTMSequence": self.check_sequence,
        }
        if t in ELTWISE:
            self.check_eltwise(node)
        elif t in checks:
            checks[t](node)

    def check_fc(self, node: Node) -> None:
        out = self.shape(node.output(0))
        batch = math.prod(out[:-1]) if len(out) > 1 else 1
        lim = self.limits.fc_max_batch
        if batch > lim:
            raise self.batch_error(node, batch, f"fully connected batch 1..{lim}")
        a = self.shape(node.input_value(0))
        transpose_a = bool(node.get_attributes().get("transpose_a", False))
        length = a[-2] if transpose_a and len(a) > 1 else a[-1]
        padded = -(-length // 8) * 8
        if padded > self.limits.max_vector_length:
            raise self.fail(f"Layer {node.friendly_name} (type MatMul): input vector length {length} "
                            f"(padded to {padded}) not supported",
                            f"vector length 8..{self.limits.max_vector_length}, padded to a multiple of 8")

    def check_eltwise(self, node: Node) -> None:
        shapes = [self.shape(v) for v in node.input_values()]
        dynamic = [s for v, s in zip(node.input_values(), shapes, strict=True) if not self.is_const(v)]
        if len(dynamic) == 2 and math.prod(dynamic[0]) != math.prod(dynamic[1]):
            raise self.fail(f"{node.friendly_name}: Inputs size mismatch (note: For Multiply, Add and Subtract "
                            "layers, auto broadcasting is only supported for constant inputs)",
                            "eltwise broadcasting of constant inputs only")

    def is_1d(self, x: list[int], kernel: list[int]) -> bool:
        return len(x) == 3 or (len(x) == 4 and x[2] == 1 and kernel[0] == 1)

    def check_conv(self, node: Node) -> None:
        x = self.shape(node.input_value(0))
        w = self.shape(node.input_value(1))
        if x[0] != 1:
            raise self.batch_error(node, x[0], "convolution batch 1")
        attrs = node.get_attributes()
        if any(d != 1 for d in attrs.get("dilations", [])):
            raise self.fail(f"Layer {node.friendly_name}: Unsupported dilation {attrs['dilations']}",
                            "convolution dilation 1")
        if len(x) not in (3, 4):
            raise self.fail(f"The plugin does not support layer {node.friendly_name} (type Convolution)!",
                            "1D or 2D convolutions only")
        if self.is_1d(x, w[2:]):
            self.check_conv1d(node, x, w)
        else:
            self.check_conv2d(node, x, w, attrs)

    def check_conv1d(self, node: Node, x: list[int], w: list[int]) -> None:
        lim = self.limits
        filters, (lo, hi), mult = w[0], lim.conv1d_filters, lim.conv1d_filters_multiple
        if not lo <= filters <= hi or filters % mult:
            extra = f", a multiple of {mult}" if mult > 1 else ""
            raise self.fail(f"Layer {node.friendly_name}: Unsupported number of filters, actual value: {filters}, "
                            f"valid range [{lo}, {hi}]{extra}", f"1D convolution filters {lo}..{hi}{extra}")
        coefficients = x[1] * w[-1]
        padded = -(-coefficients // 8) * 8
        max_c = lim.conv1d_coefficients[self.precision]
        if padded > max_c:
            raise self.fail(f"Layer {node.friendly_name}: Unsupported filter size (input channels x kernel width) "
                            f"{coefficients}, padded to {padded}, valid range [8, {max_c}]",
                            f"1D convolution coefficients per filter 8..{max_c}")

    def check_conv2d(self, node: Node, x: list[int], w: list[int], attrs: dict) -> None:
        lim = self.limits.conv2d
        if lim is None:
            raise self.fail(f"The plugin does not support layer {node.friendly_name} (type Convolution2D)!",
                            "no 2D convolution before GNA 3.0")
        _, c, h, wd = x
        kh, kw = w[2], w[3]
        for what, value, (lo, hi) in (("input height", h, lim.input_h), ("input width", wd, lim.input_w)):
            if not lo <= value <= hi:
                raise self.conv_fail(node, what, value, lo, hi)
        lo, hi = lim.channels_i8 if self.precision == "i8" else lim.channels_i16
        extra = f", multiple of {lim.channels_multiple}" if lim.channels_multiple > 1 else ""
        if not lo <= c <= hi or c % lim.channels_multiple:
            raise self.conv_fail(node, "number of input channels", c, lo, hi, extra)
        lo, hi = lim.kernels
        extra = f", multiple of {lim.kernels_multiple}" if lim.kernels_multiple > 1 else ""
        if not lo <= w[0] <= hi or w[0] % lim.kernels_multiple:
            raise self.conv_fail(node, "number of kernels", w[0], lo, hi, extra)
        if lim.kernel_by_channels is not None:
            row = next(r for r in lim.kernel_by_channels[self.precision] if c <= r[0])
            max_h, max_w = row[1], row[2]
        else:
            max_h, max_w = lim.kernel_hw  # type: ignore[misc]
        if kh > max_h:
            raise self.conv_fail(node, "kernel height", kh, 1, max_h)
        if kw > max_w:
            raise self.conv_fail(node, "kernel width", kw, 1, max_w)
        strides = list(attrs.get("strides", [1, 1]))
        if lim.stride_le_kernel:
            for what, s, k in (("convolution stride height", strides[0], kh), ("convolution stride width",
                                                                                 strides[1], kw)):
                if s > k:
                    raise self.conv_fail(node, what, s, 1, k)
        if lim.symmetric_padding:
            begin, end = list(attrs.get("pads_begin", [0, 0])), list(attrs.get("pads_end", [0, 0]))
            for i, k in enumerate((kh, kw)):
                if begin[i] != end[i] or begin[i] >= k:
                    raise self.fail(f"Layer Convolution2D: {node.friendly_name}:Unsupported padding "
                                    f"{begin}/{end} for kernel {kh}x{kw}",
                                    "symmetric padding smaller than the kernel")

    def check_pool(self, node: Node) -> None:
        x = self.shape(node.input_value(0))
        window = list(node.get_attributes().get("kernel", []))
        one_d = len(x) == 3 or (len(x) == 4 and x[2] == 1 and window[0] == 1)
        if one_d:
            size, lim = window[-1], self.limits.conv1d_max_pool
            if size > lim:
                raise self.fail(f"Layer {node.friendly_name}: Unsupported pooling window {size}",
                                f"1D pooling window 1..{lim}")
            return
        conv2d = self.limits.conv2d
        if conv2d is None:
            raise self.fail(f"The plugin does not support layer {node.friendly_name} (type {node.type_name} 2D)!",
                            "no 2D pooling before GNA 3.0")
        if conv2d.pool_square_max is not None:
            m = conv2d.pool_square_max
            if window[0] != window[1] or window[0] > m:
                raise self.fail(f"Layer {node.friendly_name}: Unsupported pooling window {window[0]}x{window[1]}",
                                "2D pooling window 1x1, 2x2 or 3x3" if m == 3 else f"square window <= {m}")
        elif conv2d.pool_max is not None and max(window) > conv2d.pool_max:
            raise self.fail(f"Layer {node.friendly_name}: Unsupported pooling window {window[0]}x{window[1]}",
                            f"2D pooling window <= {conv2d.pool_max}")

    def check_axis(self, node: Node, shape: list[int], axis: int, what: str) -> None:
        axis = axis + len(shape) if axis < 0 else axis
        if any(d > 1 for d in shape[:axis]):
            raise self.fail(f"{node.friendly_name} Unsupported {what} axis={axis}",
                            f"{what} on contiguous memory only: the axis must be the first dimension > 1")

    def check_concat(self, node: Node) -> None:
        self.check_axis(node, self.shape(node.output(0)), int(node.get_attributes()["axis"]), "concatenation")

    def check_split(self, node: Node) -> None:
        axis_out = node.input_value(1)
        if not self.is_const(axis_out):
            raise self.fail(f"{node.friendly_name}: split axis must be a constant", "constant split axis")
        axis_node = axis_out.node
        while axis_node.type_name != "Constant":
            axis_node = axis_node.input_value(0).node
        axis = int(axis_node.get_value().reshape(-1)[0])
        self.check_axis(node, self.shape(node.input_value(0)), axis, "split")

    def check_transpose(self, node: Node) -> None:
        if self.near_edge(node):
            return  # sunk to the model's edge: runs on the CPU as pre/post-processing
        dims = [d for d in self.shape(node.input_value(0)) if d > 1]
        lim = self.limits
        if len(dims) > 2 or (len(dims) == 2 and (min(dims) > lim.transpose_min_dim or max(dims) % 8
                                                 or max(dims) > lim.transpose_max)):
            raise self.fail(f"The plugin does not support layer {node.friendly_name} (type Transpose)! "
                            f"Shape {self.shape(node.input_value(0))}",
                            f"transpose of a squeezed 2D shape, min dim <= {lim.transpose_min_dim}, "
                            f"max dim a multiple of 8 and <= {lim.transpose_max}")

    def check_state(self, node: Node) -> None:
        s = self.shape(node.input_value(0)) if node.get_input_size() else self.shape(node.output(0))
        if len(s) > 1 and s[0] != 1:
            raise self.batch_error(node, s[0], "memory (ReadValue/Assign) batch 1")

    def check_cell(self, node: Node) -> None:
        batch = self.shape(node.input_value(0))[0]
        if batch != 1:
            raise self.batch_error(node, batch, f"{node.type_name} batch 1")

    def check_sequence(self, node: Node) -> None:
        """An LSTMSequence runs as one cell per frame: batch 1, sequence length 1."""
        batch, steps = self.shape(node.input_value(0))[:2]
        if batch != 1:
            raise self.batch_error(node, batch, f"{node.type_name} batch 1")
        if steps != 1:
            raise self.fail(f"topology with layer: {node.friendly_name}, type: {node.type_name}, and sequence "
                            f"length({steps}) not supported", "LSTMSequence runs one frame per inference: length 1")


def check_model(model: Model, target: HWGeneration, precision: str = "i16",
                limits: TargetLimits | None = None) -> None:
    """Raise :class:`GNALimitError` for the first layer of ``model`` that ``target`` cannot run."""
    if limits is None:
        if target not in LIMITS:
            raise GNALimitError(f"Unsupported GNA compile target {target.name}; "
                                f"supported: {', '.join(target_name(t) for t in LIMITS)}")
        limits = LIMITS[target]
    _Checker(model, limits, precision).run()
