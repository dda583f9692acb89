"""Turning what a user passes to ``infer`` into one host array per model input, checked."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import InputError
from vinerun.ir.node import Output
from vinerun.ir.shape import PartialShape
from vinerun.ir.tensor import Tensor
from vinerun.ir.types import Type


def _port_label(port: Output, index: int) -> str:
    names = sorted(port.get_names())
    return f"input '{names[0]}' (index {index})" if names else f"input {index}"


def resolve_input_key(ports: list[Output], key: Any) -> int:
    """Index of the model input that ``key`` (index, name or port) designates."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        if not 0 <= int(key) < len(ports):
            raise InputError(f"Input index {key} is out of range: the model has {len(ports)} inputs")
        return int(key)
    if isinstance(key, Output):
        for i, p in enumerate(ports):
            if p == key or (key.get_names() and key.get_names() & p.get_names()):
                return i
        raise InputError(f"{key} is not an input of this model")
    if isinstance(key, str):
        for i, p in enumerate(ports):
            if key in p.get_names() or key == p.node.friendly_name:
                return i
        known = sorted(n for p in ports for n in p.get_names())
        raise InputError(f"The model has no input named '{key}'. Inputs: {known}")
    raise InputError(f"Inputs are keyed by index, name or port, not {type(key).__name__}")


def _is_passthrough(port: Output) -> bool:
    """ONNX sequence / optional / map inputs: values are passed as they are."""
    return "onnx_kind" in port.node.rt_info


def convert_input(port: Output, index: int, value: Any) -> Any:
    """One input value -> a host array of the port's element type; raises InputError if it cannot fit."""
    if _is_passthrough(port):
        return value
    want: Type = port.element_type
    if isinstance(value, Tensor):
        arr = value.data
        if want.is_static() and value.element_type != want:
            raise InputError(f"Wrong element type for {_port_label(port, index)}: tensor is "
                             f"{value.element_type.get_type_name()}, the model expects {want.get_type_name()}")
    elif isinstance(value, np.ndarray):
        arr = value
        if want.is_static() and arr.dtype != want.to_dtype():
            arr = _cast(arr, want, _port_label(port, index))
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as e:
            raise InputError(f"Cannot convert the value for {_port_label(port, index)} to an array: {e}") from e
        if want.is_static() and arr.dtype != want.to_dtype():
            arr = _cast(arr, want, _port_label(port, index), strict=False)
    if arr.dtype.kind in "US":
        arr = arr.astype(object)
    expected = port.partial_shape
    if not _fits(expected, arr.shape):
        raise InputError(f"Wrong shape for {_port_label(port, index)}: got {list(arr.shape)}, "
                         f"the model expects {expected}")
    return arr


def _cast(arr: np.ndarray, want: Type, label: str, strict: bool = True) -> np.ndarray:
    dst = want.to_dtype()
    src = arr.dtype
    ok = (
        np.can_cast(src, dst, "same_kind")
        or (src.kind in "biu" and dst.kind in "fiu")
        or (src.kind == "f" and dst.kind == "f")
        or (not strict and src.kind in "biuf" and dst.kind in "biuf")
    )
    if src.kind in "OUS" or dst.kind == "O":
        ok = src.kind in "OUS" and dst.kind == "O"
    if not ok:
        raise InputError(f"Wrong element type for {label}: got {src}, the model expects {want.get_type_name()}; "
                         f"convert the data (e.g. array.astype(np.{dst.name})) if that is intended")
    return arr.astype(dst)


def _fits(expected: PartialShape, got: tuple[int, ...]) -> bool:
    """Whether a shape ``got`` is one of ``expected`` (each dimension within its bounds)."""
    if expected.rank.is_dynamic:
        return True
    return len(expected) == len(got) and all(
        d.get_min_length() <= g and (d.get_max_length() == -1 or g <= d.get_max_length())
        for d, g in zip(expected, got, strict=True))


class InputPorts:
    """A model's input ports with what checking a call's values needs read once (names, element types, shape
    bounds): a request checks each call's inputs in a few microseconds (silero-vad: ~27 -> ~10 us)."""

    def __init__(self, ports: list[Output]):
        self.ports = ports
        self._by_name: dict[str, int] = {}
        for i, p in enumerate(ports):
            for name in sorted(p.get_names()) + [p.node.friendly_name]:
                self._by_name.setdefault(name, i)
        # per port: None (a passthrough ONNX input), or (the dtype, or None when dynamic; the bounds of each dim,
        # or None for a dynamic rank)
        self._checks: list[tuple[np.dtype | None, tuple[tuple[int, int], ...] | None] | None] = []
        for p in ports:
            want, shape = p.element_type, p.partial_shape
            bounds = None if shape.rank.is_dynamic else tuple((d.get_min_length(), d.get_max_length())
                                                                 for d in shape)
            self._checks.append(None if _is_passthrough(p) else
                                (np.dtype(want.to_dtype()) if want.is_static() else None, bounds))

    def index(self, key: Any) -> int:
        """The index of the input ``key`` (index, name or port) designates."""
        if type(key) is str and key in self._by_name:
            return self._by_name[key]
        return resolve_input_key(self.ports, key)

    def convert(self, index: int, value: Any) -> Any:
        """``value`` as the array input ``index`` takes (see :func:`convert_input`); an array that fits as it is
        is returned at once."""
        check = self._checks[index]
        if check is not None and type(value) is np.ndarray:
            dtype, bounds = check
            if (dtype is None or value.dtype == dtype) and value.dtype.kind not in "USO" and (
                    bounds is None or (len(bounds) == value.ndim and all(
                        lo <= g and (hi == -1 or g <= hi) for (lo, hi), g in zip(bounds, value.shape, strict=True)))):
                return value
        return convert_input(self.ports[index], index, value)

    def normalize(self, inputs: Any, provided: dict[int, Any]) -> list[Any]:
        """Merge ``inputs`` (dict, list/tuple, single value or None) with tensors already set, checked."""
        ports = self.ports
        values: dict[int, Any] = dict(provided)
        if inputs is None:
            pass
        elif isinstance(inputs, dict):
            for k, v in inputs.items():
                values[self.index(k)] = v
        elif isinstance(inputs, (list, tuple)) and not (len(ports) == 1 and _is_passthrough(ports[0])):
            if len(inputs) > len(ports):
                raise InputError(f"Got {len(inputs)} inputs, but the model has only {len(ports)}")
            for i, v in enumerate(inputs):
                values[i] = v
        else:
            if len(ports) != 1:
                raise InputError(f"A single input value was given, but the model has {len(ports)} inputs; "
                                 "pass a dict keyed by input name or index")
            values[0] = inputs
        if len(values) < len(ports):
            missing = [_port_label(p, i) for i, p in enumerate(ports) if i not in values]
            raise InputError(f"Missing value for {', '.join(missing)}")
        return [self.convert(i, values[i]) for i in range(len(ports))]
