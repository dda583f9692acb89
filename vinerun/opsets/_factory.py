"""Op builder functions generated from the op registry: inputs first, then attributes in declared order.

``OpFactory(Relu)`` is the function ``relu(data, name=None)``; ``OpFactory(MatMul)`` is
``matmul(arg0, arg1, transpose_a=False, transpose_b=False, name=None)``. Input arguments accept
nodes, outputs, or plain values (made into Constants whose type follows the node inputs); ops
taking any number of inputs (Concat, Einsum) take them as one list first.
"""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Attr, Node, Output, as_output
from vinerun.ir.types import Type
from vinerun.opsets._ov_names import DEF_NAMES, PARAM_NAMES

#: Python names OpenVINO gives ops whose snake_case differs from the mechanical one.
NAME_OVERRIDES = {
    "MatMul": "matmul", "TopK": "topk", "IsNaN": "is_nan", "HSwish": "hswish", "HSigmoid": "hsigmoid",
    "SoftPlus": "softplus", "SoftSign": "softsign", "PRelu": "prelu", "If": "if_op", "CumSum": "cumsum",
    "Col2Im": "col2im", "NV12toRGB": "nv12_to_rgb", "NV12toBGR": "nv12_to_bgr", "I420toRGB": "i420_to_rgb",
    "I420toBGR": "i420_to_bgr", "BatchNormInference": "batch_norm_inference",
}

#: OpenVINO's Python signatures where they differ from "inputs, then attributes in declared order".
#: Each entry names one parameter: ``"data:0"`` is input 0, ``"kernel_shape:kernel"`` the attribute
#: ``kernel``, a bare name the attribute of that name, ``"attributes:**"`` a dict of attributes.
SIGNATURES: dict[str, list[str]] = {
    "MaxPool": ["data:0", "strides", "dilations", "pads_begin", "pads_end", "kernel_shape:kernel", "rounding_type",
                "auto_pad", "index_element_type", "axis"],
    "AvgPool": ["data_batch:0", "strides", "pads_begin", "pads_end", "kernel_shape:kernel", "exclude_pad",
                "rounding_type", "auto_pad"],
    "ConvolutionBackpropData": ["data:0", "filters:1", "strides", "output_shape:2", "pads_begin", "pads_end",
                                "dilations", "auto_pad", "output_padding"],
    "GroupConvolutionBackpropData": ["data:0", "filters:1", "strides", "output_shape:2", "pads_begin", "pads_end",
                                     "dilations", "auto_pad", "output_padding"],
    "DeformableConvolution": ["data:0", "offsets:1", "filters:2", "strides", "pads_begin", "pads_end", "dilations",
                              "mask:3", "auto_pad", "group", "deformable_group", "bilinear_interpolation_pad"],
    "Interpolate": ["image:0", "scales_or_sizes:1", "mode", "shape_calculation_mode", "pads_begin", "pads_end",
                    "coordinate_transformation_mode", "nearest_mode", "antialias", "cube_coeff", "axes:2"],
    "Pad": ["arg:0", "pads_begin:1", "pads_end:2", "pad_mode", "arg_pad_value:3"],
    "Eye": ["num_rows:0", "num_columns:1", "diagonal_index:2", "output_type", "batch_shape:3"],
    "IsInf": ["data:0", "attributes:**"],
    "GridSample": ["data:0", "grid:1", "attributes:**"],
    "Broadcast": ["data:0", "target_shape:1", "axes_mapping:2", "broadcast_spec:mode"],
    "Clamp": ["data:0", "min_value:min", "max_value:max"],
}

_REQUIRED = Attr.REQUIRED
_VARIADIC = 1 << 20


def python_name(type_name: str) -> str:
    """``"LSTMSequence"`` -> ``"lstm_sequence"`` (OpenVINO's opset function names)."""
    if type_name in NAME_OVERRIDES:
        return NAME_OVERRIDES[type_name]
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", type_name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    return s + "_op" if keyword.iskeyword(s) else s


def _node_type(values: list[Any]) -> Type | None:
    for v in values:
        if isinstance(v, (Node, Output)):
            out = as_output(v) if isinstance(v, Node) and v.get_output_size() == 1 else v
            if isinstance(out, Output) and out.element_type.is_static():
                return out.element_type
    return None


def as_input(value: Any, like: Type | None = None) -> Output | None:
    """A node input from a Node/Output, or a Constant from a plain value.

    Python numbers and lists take the element type of the op's other inputs when their kinds
    agree (float with float, int with int); otherwise floats become f32 and ints i64. NumPy arrays
    keep their dtype.
    """
    if value is None or isinstance(value, (Node, Output)):
        return None if value is None else as_output(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return Constant(np.asarray(value)).output(0)
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        et = like if like is not None and like.is_real() else Type.f32
        arr = arr.astype(et.to_dtype())
    elif arr.dtype.kind in "iu" and like is not None and like.is_integral_number():
        arr = arr.astype(like.to_dtype())
    return Constant(arr).output(0)


def _enum_case(spec: Attr, value: Any) -> Any:
    """OpenVINO's Python API spells some enums upper-case ("EXPLICIT"); follow the op's own spelling."""
    if spec.kind == "str" and isinstance(value, str) and isinstance(spec.default, str) and spec.default.islower():
        return value.lower()
    return value


class OpFactory:
    """A builder function for one op class (``ops.relu``, ``ops.matmul`` ...)."""

    def __init__(self, cls: type[Node]):
        self.cls = cls
        self.builder_name = python_name(cls.type_name)  # PARAM_NAMES is keyed by it
        self.__name__ = self.__qualname__ = DEF_NAMES.get(self.builder_name, self.builder_name)
        self.__module__ = "vinerun.opsets"
        lo, hi = cls.num_inputs
        self.variadic = hi >= _VARIADIC
        self.n_required, self.n_inputs = (0, 1) if self.variadic else (lo, hi)
        self.specs = {n: s for n, s in cls._attr_specs.items() if s.kind != "tensor"}
        #: (python name, target): target is an input index, an attribute name, or "**"
        self.layout: list[tuple[str, int | str]] = self._layout()
        self.__doc__ = f"Create a {cls.type_name} ({cls.version}) node.\n\n{inspect.getdoc(cls) or ''}"
        self.__signature__ = self._signature()

    def _layout(self) -> list[tuple[str, int | str]]:
        declared = SIGNATURES.get(self.cls.type_name)
        if declared is not None:
            out: list[tuple[str, int | str]] = []
            for entry in declared:
                pname, _, target = entry.partition(":")
                target = target or pname
                if target.isdigit() and int(target) >= self.n_inputs:
                    continue  # an input this version of the op does not have
                if not target.isdigit() and target != "**" and target not in self.specs:
                    continue
                out.append((pname, int(target) if target.isdigit() else target))
            covered = {t for _, t in out}
            out += [(n, n) for n in self.specs if n not in covered and "**" not in covered]
            return out
        ov_names = PARAM_NAMES.get(self.builder_name)
        if ov_names is not None:
            return self._layout_from_names(ov_names)
        names = ["inputs"] if self.variadic else list(getattr(self.cls, "input_names", ()))
        names += [f"arg{i}" for i in range(len(names), self.n_inputs)]
        return [(n, i) for i, n in enumerate(names)] + [(n, n) for n in self.specs]

    def _layout_from_names(self, ov_names: list[str]) -> list[tuple[str, int | str]]:
        """OpenVINO's parameter names: attribute names go to attributes, the others to inputs in order."""
        out: list[tuple[str, int | str]] = []
        next_input = 0
        n_inputs = 1 if self.variadic else self.n_inputs
        for pname in ov_names:
            if pname in self.specs:
                out.append((pname, pname))
            elif next_input < n_inputs:
                out.append((pname, next_input))
                next_input += 1
            # else: a parameter of a newer version of the op than this class has
        out += [(f"arg{i}", i) for i in range(next_input, n_inputs)]
        covered = {t for _, t in out}
        return out + [(n, n) for n in self.specs if n not in covered]

    def _required(self, target: int | str) -> bool:
        if isinstance(target, int):
            return target < self.n_required
        return target != "**" and self.specs[target].default is _REQUIRED

    def _signature(self) -> inspect.Signature:
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = []
        optional_seen = False
        for pname, target in self.layout:
            if self._required(target):
                default = _REQUIRED if optional_seen else inspect.Parameter.empty
            else:
                default = None if isinstance(target, int) or target == "**" else self.specs[target].default
                optional_seen = True
            params.append(inspect.Parameter(pname, kind, default=default))
        params.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None))
        return inspect.Signature(params)

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[int | str, Any]:
        if len(args) > len(self.layout):
            raise TypeError(f"{self.__name__}() takes at most {len(self.layout)} arguments ({len(args)} given)")
        by_name = {p: t for p, t in self.layout}
        by_name.update({t: t for _, t in self.layout if isinstance(t, str) and t != "**"})  # attr names too
        bound: dict[int | str, Any] = {t: v for (_, t), v in zip(self.layout, args, strict=False)}
        for k, v in kwargs.items():
            if k not in by_name:
                raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{k}'")
            if by_name[k] in bound:
                raise TypeError(f"{self.__name__}() got multiple values for argument '{k}'")
            bound[by_name[k]] = v
        extra = bound.pop("**", None) or {}
        for k, v in dict(extra).items():
            if k not in self.specs:
                raise TypeError(f"{self.__name__}(): unknown attribute '{k}'; known: {sorted(self.specs)}")
            bound[k] = v
        missing = [p for p, t in self.layout if self._required(t) and bound.get(t, _REQUIRED) is _REQUIRED]
        if missing:
            raise TypeError(f"{self.__name__}() missing required argument(s): {', '.join(missing)}")
        return bound

    def __call__(self, *args: Any, name: str | None = None, **kwargs: Any) -> Node:
        bound = self._bind(args, kwargs)
        raw = [bound.get(i) for i in range(self.n_inputs)]
        if self.variadic:
            raw = list(raw[0]) if raw[0] is not None else []
        like = _node_type(raw)
        inputs = [as_input(v, like) for v in raw]
        while inputs and inputs[-1] is None:
            inputs.pop()
        attrs = {n: _enum_case(s, bound[n]) for n, s in self.specs.items() if n in bound}
        try:
            if self.variadic and self.cls._takes_list():
                return self.cls(inputs, name=name, **attrs)
            return self.cls(*inputs, name=name, **attrs)
        except TypeError as e:
            raise ValidationError(f"{self.__name__}(): {e}") from e

    def __repr__(self) -> str:
        return f"<op builder {self.__name__}{self.__signature__}>"
