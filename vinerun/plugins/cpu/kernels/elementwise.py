"""Element-wise kernels on ATen: arithmetic, activations, unary math, comparisons, logic and Select.

Each factory declines (returns None) for element types or attributes it does not cover, and the
node then runs its NumPy reference. Small f32 Add/Subtract/Multiply/Maximum/Minimum, unary math and
comparisons (these of any NumPy dtype) run NumPy's ufuncs (the same IEEE results, without the torch
conversions). f32/bf16 activations of static shape get oneDNN's eltwise primitive (:mod:`.eltwise_dnnl`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._native import strided_view
from vinerun.plugins.cpu.kernels._torch import BF16, FLOAT_TYPES, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.binary_dnnl import dnnl_binary_kernel
from vinerun.plugins.cpu.kernels.convert_dnnl import dnnl_convert_kernel
from vinerun.plugins.cpu.kernels.eltwise_dnnl import dnnl_eltwise_kernel

# integer types whose ATen arithmetic wraps exactly like NumPy's
_INT = ("i8", "u8", "i16", "i32", "i64")
_TORCH_TYPES = FLOAT_TYPES + _INT + ("boolean",)

_BINARY: dict[str, Callable] = {"Add": torch.add, "Subtract": torch.sub, "Multiply": torch.mul,
                                "Maximum": torch.maximum, "Minimum": torch.minimum}
_COMPARE: dict[str, Callable] = {"Equal": torch.eq, "NotEqual": torch.ne, "Less": torch.lt, "LessEqual": torch.le,
                                 "Greater": torch.gt, "GreaterEqual": torch.ge}
_LOGICAL: dict[str, Callable] = {"LogicalAnd": torch.logical_and, "LogicalOr": torch.logical_or,
                                 "LogicalXor": torch.logical_xor}
_UNARY: dict[str, Callable] = {
    "Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Exp": torch.exp, "Log": torch.log,
    "Abs": torch.abs, "Sqrt": torch.sqrt, "Erf": torch.erf, "Negative": torch.neg, "Floor": torch.floor,
    "Ceiling": torch.ceil, "Sign": torch.sign, "Sin": torch.sin, "Cos": torch.cos, "Tan": torch.tan,
    "Asin": torch.asin, "Acos": torch.acos, "Atan": torch.atan, "Sinh": torch.sinh, "Cosh": torch.cosh,
    "Asinh": torch.asinh, "Acosh": torch.acosh, "Atanh": torch.atanh, "SoftSign": F.softsign,
    "Mish": F.mish, "HSwish": F.hardswish,
}


def _types(node: Node) -> list[str]:
    return [o.element_type.get_type_name() for o in node.input_values() if o is not None]


def _all_in(node: Node, allowed: tuple[str, ...]) -> bool:
    return all(t in allowed for t in _types(node))


def _numpy_broadcast(node: Node) -> bool:
    return node.get_attributes().get("auto_broadcast", "numpy") == "numpy"


def _unary_kernel(op: Callable, name: str) -> Kernel:
    def run(inputs):
        return [to_numpy(op(to_torch(inputs[0])))]

    return Kernel(run, f"aten_{name}")


def _binary_kernel(op: Callable, name: str) -> Kernel:
    def run(inputs):
        return [to_numpy(op(to_torch(inputs[0]), to_torch(inputs[1])))]

    return Kernel(run, f"aten_{name}")


# NumPy's ufuncs for the binary ops whose results are bit-identical to ATen's (IEEE, same rounding)
_NUMPY_BINARY: dict[str, np.ufunc] = {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply,
                                      "Maximum": np.maximum, "Minimum": np.minimum}
#: the largest f32 operands the NumPy path takes: below this, converting to and from torch costs more
#: than the arithmetic
SMALL = 4096
_F32 = np.dtype(np.float32)


#: the largest bf16 operands of the NumPy path (ml_dtypes' ufuncs: the same f32 arithmetic and rounding as ATen's,
#: [1, 1, 256] added in 0.6 us where ATen takes 5.4 us with its conversions; even at 4096)
SMALL_BF16 = 2048


def _small_binary_kernel(op: Callable, ufunc: np.ufunc, name: str,
                         types: frozenset[np.dtype] = frozenset({_F32}), bf16: bool = False) -> Kernel:
    """ATen, except for small operands of one dtype of ``types``, which NumPy's ufunc handles without the two
    conversions (two int64 scalars compared: 12 us -> 1 us); with ``bf16``, small bf16 operands too."""

    def run(inputs):
        a, b = inputs[0], inputs[1]
        if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype and (
                (a.dtype in types and a.size <= SMALL and b.size <= SMALL)
                or (bf16 and a.dtype == BF16 and a.size <= SMALL_BF16 and b.size <= SMALL_BF16)):
            r = ufunc(a, b)
            return [r if type(r) is np.ndarray else np.asarray(r)]  # 0-D operands give a NumPy scalar
        return [to_numpy(op(to_torch(a), to_torch(b)))]

    return Kernel(run, f"aten_{name}")


@cpu_kernel(*_BINARY)
def binary(node: Node) -> Kernel | None:
    if not _all_in(node, FLOAT_TYPES + _INT) or not _numpy_broadcast(node):
        return None
    op = _BINARY[node.type_name]
    return dnnl_binary_kernel(node, _small_binary_kernel(op, _NUMPY_BINARY[node.type_name], op.__name__, bf16=True))


@cpu_kernel("Divide", "Power", "SquaredDifference")
def float_binary(node: Node) -> Kernel | None:
    if not _all_in(node, FLOAT_TYPES) or not _numpy_broadcast(node):
        return None
    if node.type_name == "Divide":
        return _binary_kernel(torch.div, "div")
    if node.type_name == "Power":
        exponent = node.const_input(1)
        rank = node.get_input_partial_shape(0).rank
        if (exponent is not None and exponent.size == 1 and float(exponent.reshape(-1)[0]) == 2.0
                and (exponent.ndim == 0 or (rank.is_static and exponent.ndim <= rank.get_length()))):
            # x ** 2 is x * x (exactly rounded, in ATen too)
            return dnnl_eltwise_kernel(node, _small_binary_kernel(torch.pow, lambda a, b: np.multiply(a, a), "pow"))
        return dnnl_eltwise_kernel(node, _binary_kernel(torch.pow, "pow"))
    return _binary_kernel(lambda a, b: torch.square(a - b), "squared_difference")


# NumPy's comparisons: the same results as ATen's (IEEE for floats, NaN unequal to everything)
_NUMPY_COMPARE: dict[str, np.ufunc] = {"Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less,
                                       "LessEqual": np.less_equal, "Greater": np.greater,
                                       "GreaterEqual": np.greater_equal}
#: dtypes of the NumPy comparisons (not bf16: ml_dtypes' ufuncs cost more than ATen's conversions)
_NUMPY_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16,
                                               np.int32, np.int64, np.bool_))


@cpu_kernel(*_COMPARE)
def compare(node: Node) -> Kernel | None:
    if not _all_in(node, _TORCH_TYPES) or not _numpy_broadcast(node):
        return None
    op = _COMPARE[node.type_name]
    return _small_binary_kernel(op, _NUMPY_COMPARE[node.type_name], op.__name__, _NUMPY_TYPES)


@cpu_kernel(*_LOGICAL)
def logical(node: Node) -> Kernel | None:
    if not _all_in(node, ("boolean",)) or not _numpy_broadcast(node):
        return None
    op = _LOGICAL[node.type_name]
    return _binary_kernel(op, op.__name__)


@cpu_kernel("LogicalNot")
def logical_not(node: Node) -> Kernel | None:
    return _unary_kernel(torch.logical_not, "logical_not") if _all_in(node, ("boolean",)) else None


@cpu_kernel("Select")
def select(node: Node) -> Kernel | None:
    cond, a, b = _types(node)
    if cond != "boolean" or a != b or a not in _TORCH_TYPES or not _numpy_broadcast(node):
        return None

    def run(inputs):
        return [to_numpy(torch.where(to_torch(inputs[0]), to_torch(inputs[1]), to_torch(inputs[2])))]

    return Kernel(run, "aten_where")


# unary ops that are exact on signed integers too (Abs and Negative wrap at the minimum, as in NumPy)
_INT_UNARY = ("Relu", "Abs", "Negative", "Sign")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` in f32, within 3 ulps of the exact value; -x capped where exp would overflow (below
    x = -88.7, where ATen's gives 0, a denormal under 3e-39)."""
    t = np.negative(x)
    np.minimum(t, np.float32(88.72), out=t)
    np.exp(t, out=t)
    t += np.float32(1)
    return np.reciprocal(t, out=t)


# NumPy equivalents of unary ops, for small f32 arrays (exact ops, and Tanh/Exp/Sigmoid within a few ulps): cheaper
# than ATen's conversions and dispatch, which also cost 3-4 times more as an iteration's first ATen call (code not
# in cache: a Sigmoid after a MatMul took 12 us, the same call repeated 3.6 us)
_NUMPY_UNARY: dict[str, Callable] = {"Relu": lambda x: np.maximum(x, np.float32(0)), "Sqrt": np.sqrt,
                                     "Abs": np.abs, "Negative": np.negative, "Floor": np.floor,
                                     "Ceiling": np.ceil, "Tanh": np.tanh, "Exp": np.exp, "Sigmoid": _sigmoid}


def _small_unary_kernel(op: Callable, small: Callable, name: str) -> Kernel:
    """ATen, except for small f32 arrays, which NumPy handles without the two conversions (first made
    C-contiguous: NumPy would keep a channels-last input's order, which only some readers take)."""

    def run(inputs):
        x = inputs[0]
        if type(x) is np.ndarray and x.dtype == _F32 and 0 < x.ndim and x.size <= SMALL:
            return [small(x if x.flags.c_contiguous else np.ascontiguousarray(x))]
        return [to_numpy(op(to_torch(x)))]

    return Kernel(run, f"aten_{name}")


@cpu_kernel(*_UNARY)
def unary(node: Node) -> Kernel | None:
    allowed = FLOAT_TYPES + ("i8", "i16", "i32", "i64") if node.type_name in _INT_UNARY else FLOAT_TYPES
    if not _all_in(node, allowed):
        return None
    op = _UNARY[node.type_name]
    name = getattr(op, "__name__", node.type_name.lower())
    small = _NUMPY_UNARY.get(node.type_name)
    return dnnl_eltwise_kernel(node, _unary_kernel(op, name) if small is None else _small_unary_kernel(op, small, name))


@cpu_kernel("Elu", "Gelu", "SoftPlus", "Clamp", "Round")
def parametrized_unary(node: Node) -> Kernel | None:
    if not _all_in(node, FLOAT_TYPES):
        return None
    return dnnl_eltwise_kernel(node, _parametrized_unary(node))


def _parametrized_unary(node: Node) -> Kernel:
    t = node.type_name
    if t == "Elu":
        alpha = node.alpha
        return _unary_kernel(lambda x: F.elu(x, alpha), "elu")
    if t == "Gelu":
        approximate = "tanh" if node.approximation_mode.upper() == "TANH" else "none"
        return _unary_kernel(lambda x: F.gelu(x, approximate=approximate), "gelu")
    if t == "SoftPlus":
        return _unary_kernel(lambda x: torch.logaddexp(x, torch.zeros((), dtype=x.dtype)), "logaddexp")
    if t == "Clamp":
        lo, hi = node.min, node.max
        return _unary_kernel(lambda x: torch.clamp(x, lo, hi), "clamp")
    if node.mode == "half_to_even":
        return _unary_kernel(torch.round, "round")
    return _unary_kernel(lambda x: torch.sign(x) * torch.floor(torch.abs(x) + 0.5), "round_half_away")


@cpu_kernel("PRelu", "Swish", "HardSigmoid", "Selu")
def param_activation(node: Node) -> Kernel | None:
    if not _all_in(node, FLOAT_TYPES):
        return None
    fns: dict[str, Callable] = {
        "PRelu": lambda x, s: torch.where(x < 0, x * s, x),
        "Swish": lambda x, beta=None: x * torch.sigmoid(x if beta is None else x * beta),
        "HardSigmoid": lambda x, a, b: torch.clamp(x * a + b, 0.0, 1.0),
        "Selu": lambda x, a, lam: lam * torch.where(x > 0, x, a * torch.expm1(x)),
    }
    fn = fns[node.type_name]

    def run(inputs):
        return [to_numpy(fn(*[to_torch(v) for v in inputs if v is not None]))]

    return dnnl_eltwise_kernel(node, Kernel(run, f"aten_{node.type_name.lower()}"))


_TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
                "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
                "boolean": torch.bool}


def identity_convert(node: Node) -> Kernel:
    """A Convert to the type its input has (``x.float()`` on a float tensor: three in silero-vad's main model): a
    view of the input (the plan copies a model output that would alias a model input), native in segments."""
    kernel = Kernel(lambda inputs: [inputs[0]], "view_convert")
    shape = node.get_input_partial_shape(0)
    if shape.is_static and shape.rank.get_length() > 0:
        kernel.native = strided_view(node, lambda x: [(x, 0)])
    return kernel


#: the largest arrays f32 -> bf16 and bf16 -> f32 conversions take through ml_dtypes' casts (the same
#: round-to-nearest-even as ATen's, NaN stays NaN), where ATen's vectorized casts win past them (2 threads): a
#: decoder step's [1, 1, 256] 0.5 us where ATen takes ~4 us with its conversions; a [1, 4, 64, 64] KV cache back
#: to f32 1.2 us, ATen 4.5 us
SMALL_TO_BF16, SMALL_FROM_BF16 = 8192, 131072


def _small_float_convert(to: np.dtype, torch_dtype: torch.dtype) -> Kernel:
    """f32 <-> bf16: NumPy casts (ml_dtypes) for small arrays, ATen for the others."""
    small = SMALL_TO_BF16 if to == BF16 else SMALL_FROM_BF16

    def run(inputs: list) -> list:
        x = inputs[0]
        if type(x) is np.ndarray and x.size <= small:
            with np.errstate(invalid="ignore"):  # ml_dtypes warns on casting a NaN; it stays NaN, as in ATen
                return [x.astype(to)]
        return [to_numpy(to_torch(x).to(torch_dtype))]

    return Kernel(run, "aten_to")


@cpu_kernel("Convert", "ConvertLike")
def convert(node: Node) -> Kernel | None:
    """Conversions where ATen can reproduce the reference exactly.

    Into floats from any ATen type; between integers (two's complement wrap); into booleans (non-zero is true);
    float -> integer up to 32 bits (truncate, NaN -> 0, clamp to the range: done in f64, where those bounds are
    exact).
    """
    if node.type_name == "Convert" and node.get_input_element_type(0) == node.get_output_element_type(0):
        return identity_convert(node)
    direct = dnnl_convert_kernel(node)  # f32 <-> bf16, static shapes
    if direct is not None:
        return direct
    src = _types(node)[0]
    dst = node.get_output_element_type(0).get_type_name()
    if src not in _TORCH_TYPES or dst not in _TORCH_TYPES:
        return None
    dtype = _TORCH_DTYPE[dst]
    if dst == "boolean":  # non-zero (NaN too) is true, as NumPy's and the reference's cast
        return _unary_kernel(lambda x: x.to(dtype), "to")
    if dst in FLOAT_TYPES:
        if src == "f64" and dst in ("f16", "bf16"):
            return None  # ATen narrows f64 through f32: two roundings
        if {src, dst} == {"f32", "bf16"}:
            return _small_float_convert(np.dtype(node.get_output_element_type(0).to_dtype()), dtype)
        return _unary_kernel(lambda x: x.to(dtype), "to")
    if src in _INT or src == "boolean":
        return _unary_kernel(lambda x: x.to(dtype), "to")
    if dst == "i64":
        return None
    info = torch.iinfo(dtype)

    def float_to_int(x: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num(x.double().trunc(), nan=0.0).clamp(info.min, info.max).to(dtype)

    return _unary_kernel(float_to_int, "trunc_clamp_to")


@cpu_kernel("MatMul")
def matmul(node: Node) -> Kernel | None:
    if not _all_in(node, FLOAT_TYPES):
        return None
    ta, tb = node.transpose_a, node.transpose_b

    def run(inputs):
        a, b = to_torch(inputs[0]), to_torch(inputs[1])
        if ta and a.dim() >= 2:
            a = a.transpose(-1, -2)
        if tb and b.dim() >= 2:
            b = b.transpose(-1, -2)
        return [to_numpy(torch.matmul(a, b))]

    return Kernel(run, "aten_matmul")



@cpu_kernel("IsNaN", "IsFinite")
def float_test(node: Node) -> Kernel | None:
    """IsNaN / IsFinite of a float tensor (an attention's NaN guard runs one per layer)."""
    if not _all_in(node, FLOAT_TYPES):
        return None
    op = torch.isnan if node.type_name == "IsNaN" else torch.isfinite
    return _unary_kernel(op, op.__name__)


@cpu_kernel("ReplaceNaN")
def replace_nan(node: Node) -> Kernel | None:
    """A NaN guard (``Select(IsNaN(x), c, x)``, see ``transformations/nan_guard.py``) as one ATen pass; infinities
    stay."""
    if not _all_in(node, FLOAT_TYPES):
        return None
    value = float(node.value)  # type: ignore[attr-defined]
    return _unary_kernel(lambda t: torch.nan_to_num(t, nan=value, posinf=math.inf, neginf=-math.inf), "nan_to_num")
