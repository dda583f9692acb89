"""Turning what a user passes to ``infer`` into one host array per model input, checked."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import InputError
from vinerun.ir.node import Output
from vinerun.ir.shape import PartialShape
from vinerun.ir.tensor import Tensor, tensor_values
from vinerun.ir.types import Type, storage_dtype
from vinerun.runtime.results import OVDict, same_port


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
            if same_port(p, key) or (key.get_names() and key.get_names() & p.get_names()):
                return i
        raise InputError(f"{key} is not an input of this model")
    if isinstance(key, str):
        for i, p in enumerate(ports):
            if key in p.get_names() or key == p.node.friendly_name:
                return i
        known = sorted(n for p in ports for n in p.get_names())
        # OpenVINO's message opens with "Check '<condition>' failed"; scripts match it
        raise InputError(f"Check 'port' failed: Port for tensor name {key} was not found: the model has no "
                         f"input named '{key}'. Inputs: {known}")
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
        arr = tensor_values(value)  # strings: str / bytes items; sub-byte types: one element per item
        if want.is_static() and value.element_type != want:
            raise InputError(f"Wrong element type for {_port_label(port, index)}: tensor is "
                             f"{value.element_type.get_type_name()}, the model expects {want.get_type_name()}")
    elif isinstance(value, np.ndarray):
        arr = value
        if want == Type.bf16 and arr.dtype == np.float16:
            arr = arr.view(storage_dtype(want))  # as openvino: float16 data given for bf16 carries bf16 bits
        if want.is_static() and arr.dtype != storage_dtype(want):
            # any number to any number, as OpenVINO's dispatcher (``astype``); strings never become numbers
            arr = _cast(arr, want, _port_label(port, index), strict=False)
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as e:
            raise InputError(f"Cannot convert the value for {_port_label(port, index)} to an array: {e}") from e
        if want.is_static() and arr.dtype != storage_dtype(want):
            arr = _cast(arr, want, _port_label(port, index), strict=False)
    if arr.dtype.kind in "US":
        arr = arr.astype(object)
    expected = port.partial_shape
    if not _fits(expected, arr.shape):
        raise InputError(f"Wrong shape for {_port_label(port, index)}: got {list(arr.shape)}, "
                         f"the model expects {expected}")
    return arr


def _cast(arr: np.ndarray, want: Type, label: str, strict: bool = True) -> np.ndarray:
    dst = storage_dtype(want)  # strings: object arrays of str / bytes
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
                                (storage_dtype(want) if want.is_static() else None, bounds))

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

    def split(self, inputs: Any) -> list[tuple[int, Any]]:
        """``(input index, value)`` pairs of what a call passes, as OpenVINO's data dispatcher reads it.

        A dict (keys: index, name or port), an ``OVDict`` (by position), a list or tuple (by position), or one
        value (a Tensor, an array or array-like, a scalar) for a single-input model. A list of plain values
        (numbers, strings) for a single-input model is that input's value, not one value per input.
        """
        ports = self.ports
        if inputs is None:
            return []
        if isinstance(inputs, dict):
            pairs = []
            for k, v in inputs.items():
                if not isinstance(k, (str, int, np.integer, Output)):
                    raise TypeError(f"Incompatible key type for input: {k}")
                pairs.append((self.index(k), v))
            return pairs
        if isinstance(inputs, OVDict):
            values = list(inputs.values())
        elif isinstance(inputs, tuple) or (isinstance(inputs, list) and not (
                len(ports) == 1 and (_is_passthrough(ports[0]) or _is_plain_list(inputs)))):
            values = list(inputs)
        elif isinstance(inputs, (Tensor, np.ndarray, np.generic, int, float, str, bytes, list)) or hasattr(
                inputs, "__array__"):
            if len(ports) != 1:
                raise InputError(f"A single input value was given, but the model has {len(ports)} inputs; "
                                 "pass a dict keyed by input name or index")
            return [(0, inputs)]
        else:
            raise TypeError(f"Incompatible inputs of type: {type(inputs)}")
        if len(values) > len(ports):
            raise InputError(f"Got {len(values)} inputs, but the model has only {len(ports)}")
        return list(enumerate(values))


def _is_plain_list(values: list) -> bool:
    """A list (or list of lists) of numbers, strings or bytes: one input's data, not several inputs."""
    return all(all(isinstance(x, (str, float, int, bytes)) for x in v) if isinstance(v, list)
               else isinstance(v, (str, float, int, bytes)) for v in values)
