"""The tensors an infer request holds, and how a call's data gets into them (OpenVINO's memory modes).

Inputs (``put``), as OpenVINO's data dispatcher:
- a ``Tensor`` becomes the input's tensor as it is (shared, never copied);
- an array, with ``share_inputs=False``, is copied into the input's tensor (cast to its element type; a
  new tensor when the shape changes); with ``share_inputs=True`` the array itself becomes the tensor when it is
  C-contiguous, writable and of the input's element type, else a converted copy does;
- a scalar, a 0-d array that must be reshaped, a list or another array-like is converted into a new tensor.

Outputs: the request keeps each output's array from the last run. A tensor handed out
(``get_output_tensor``) or set by the user receives later results in place. Results are copies
(``OWNDATA``), or with ``share_outputs=True`` views of the request's tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import InputError
from vinerun.ir import packing
from vinerun.ir.node import Output
from vinerun.ir.tensor import Tensor, tensor_memory, tensor_values
from vinerun.ir.types import Type, storage_dtype
from vinerun.runtime.inputs import InputPorts, _fits, _is_passthrough, _port_label, convert_input
from vinerun.runtime.remote import RemoteTensor
from vinerun.runtime.results import same_port

BATCHED_GET = "get_tensor shall not be used together with batched set_tensors/set_input_tensors"


def _zeros(port: Output) -> np.ndarray:
    """A new array for ``port``: its static shape, dynamic dimensions 0 (a dynamic rank: one dimension 0)."""
    shape = port.partial_shape
    dims = [0] if shape.rank.is_dynamic else [d.get_length() if d.is_static else 0 for d in shape]
    et = port.element_type
    if et == Type.string:
        return np.full(dims, "", dtype=object)
    return np.zeros(dims, dtype=storage_dtype(et) if et.is_static() else np.float32)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (np.generic, int, float, str, bytes))


class RequestTensors:
    """The input and output tensors of one infer request."""

    def __init__(self, checks: InputPorts, outputs: list[Output], device_memory: bool = False):
        self.checks = checks
        #: whether the device takes tensors in its own memory (RemoteTensor, torch / DLPack GPU tensors) as inputs
        self.device_memory = device_memory
        self._device_in: dict[int, Any] = {}  # input -> a tensor in device memory, passed as it is
        self.inputs = checks.ports
        self.outputs = outputs
        self._in: list[Tensor | None] = [None] * len(self.inputs)
        self._raw: dict[int, Any] = {}  # ONNX sequence / optional inputs: values as they are
        self._batched: dict[int, tuple[int, list[Tensor]]] = {}  # input -> (batch axis, one tensor per item)
        self._types = [p.element_type for p in self.inputs]
        self._passthrough = [_is_passthrough(p) for p in self.inputs]
        # whether input i's tensor is one this request made and checked, which nobody else can reshape
        self._checked = [False] * len(self.inputs)
        self._dtypes = [storage_dtype(t) if t.is_static() and t != Type.string else None for t in self._types]
        self._out_values: list[Any] | None = None  # each output's value from the last run
        self._out_types = [p.element_type for p in outputs]
        self._out_held: list[Tensor | None] = [None] * len(outputs)  # tensors handed out or set: written in place

    # --- inputs -----------------------------------------------------------------------
    def find(self, key: Any) -> tuple[bool, int]:
        """``(is an input, index)`` of the port ``key`` (a tensor name, a port, or an input index) designates."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return True, self.checks.index(key)
        if isinstance(key, Output):
            for i, p in enumerate(self.inputs):
                if same_port(p, key):
                    return True, i
            for i, p in enumerate(self.outputs):
                if same_port(p, key):
                    return False, i
            raise InputError(f"{key} is neither an input nor an output of this model")
        if isinstance(key, str):
            for ports, is_input in ((self.inputs, True), (self.outputs, False)):
                for i, p in enumerate(ports):
                    if key in p.get_names():
                        return is_input, i
            for ports, is_input in ((self.inputs, True), (self.outputs, False)):  # vinerun: friendly names too
                for i, p in enumerate(ports):
                    if key == p.node.friendly_name:
                        return is_input, i
            raise InputError(f"Port for tensor name {key} was not found.")
        raise TypeError(f"Tensors are found by tensor name, port or input index, not {type(key).__name__}")

    def put(self, inputs: Any, share: bool) -> None:
        """Put a call's ``inputs`` into the input tensors (see the module docstring)."""
        for index, value in self.checks.split(inputs):
            self._put(index, value, share)

    def _put(self, index: int, value: Any, share: bool) -> None:
        if self._passthrough[index]:
            self._raw[index] = value
            return
        self._device_in.pop(index, None)
        if is_device_tensor(value):
            self._put_device(index, value)
            return
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__") and not hasattr(value, "__array__"):
            value = np.from_dlpack(value)  # a host tensor of another library: shared, not copied
        port = self.inputs[index]
        if isinstance(value, Tensor):
            self.set_input(index, value)
            return
        if isinstance(value, np.ndarray):
            arr = value
            if arr.dtype == np.float16 and self._types[index] == Type.bf16:
                arr = arr.view(self._dtypes[index])  # as openvino: float16 data for bf16 carries bf16 bits
        elif _is_scalar(value) or isinstance(value, list):
            self._own(index, self._converted(index, np.asarray(value) if _is_scalar(value) else value))
            return
        elif hasattr(value, "__array__"):
            arr = np.asarray(value)
        else:
            raise TypeError(f"Incompatible inputs of type: {type(value)} under {index} key!")
        dtype = self._dtypes[index]
        if self._types[index] == Type.bf16 and arr.dtype == np.float16:
            arr = arr.view(dtype)  # as openvino: float16 data given for bf16 carries bf16 bits (Tensor.data's view)
        if arr.ndim == 0 and (port.partial_shape.rank.is_dynamic or len(port.partial_shape) != 0):
            self._own(index, self._converted(index, arr))  # a scalar for a shaped input: a new (reshaped) tensor
        elif dtype is None or arr.dtype.kind in "OUSV":
            self._own(index, self._converted(index, arr))  # strings: converted by convert_input
        elif share:
            if arr.dtype == dtype and arr.flags.c_contiguous and arr.flags.writeable:
                self._own(index, self.checks.convert(index, arr))  # checks the shape; the array itself
            else:
                self._own(index, self._converted(index, arr))
        else:
            self._copy_into(index, arr)

    def _put_device(self, index: int, value: Any) -> None:
        """Input ``index`` is a tensor in device memory: checked and passed to the device as it is."""
        port = self.inputs[index]
        label = _port_label(port, index)
        if not self.device_memory:
            raise InputError(f"The value for {label} is in device memory ({_device_label(value)}); this device "
                             "takes host memory: copy it to the host first (e.g. tensor.cpu()), or compile for GPU")
        shape, et = device_tensor_meta(value)
        want = port.element_type
        if want.is_static() and et != want:
            raise InputError(f"Wrong element type for {label}: the device tensor is {et.get_type_name()}, the model "
                             f"expects {want.get_type_name()}")
        if not _fits(port.partial_shape, shape):
            raise InputError(f"Wrong shape for {label}: got {list(shape)}, the model expects {port.partial_shape}")
        self._device_in[index] = value
        self._in[index] = None
        self._checked[index] = False
        self._batched.pop(index, None)

    def _converted(self, index: int, value: Any) -> np.ndarray:
        """A new array holding ``value`` as input ``index`` takes it (never the caller's memory)."""
        port = self.inputs[index]
        if isinstance(value, np.ndarray) and value.ndim == 0 and port.partial_shape.rank.is_static:
            dims = tuple(d.get_length() if d.is_static else 1 for d in port.partial_shape)
            if int(np.prod(dims)) == 1:
                value = value.reshape(dims)
        arr = convert_input(port, index, value)
        if isinstance(value, np.ndarray) and isinstance(arr, np.ndarray) and np.may_share_memory(arr, value):
            arr = arr.copy()
        return arr

    def _copy_into(self, index: int, arr: np.ndarray) -> None:
        """Copy ``arr`` into input ``index``'s tensor, casting; a new tensor if there is none of that shape."""
        t = self._in[index]
        mem = tensor_memory(t) if t is not None else None
        if (mem is not None and index not in self._batched and mem.shape == arr.shape
                and mem.dtype == self._dtypes[index] and mem.flags.writeable):
            np.copyto(mem, arr, casting="unsafe")
            return
        port = self.inputs[index]
        if not _fits(port.partial_shape, arr.shape):
            raise InputError(f"Wrong shape for {_port_label(port, index)}: got {list(arr.shape)}, "
                             f"the model expects {port.partial_shape}")
        new = np.empty(arr.shape, self._dtypes[index])
        np.copyto(new, arr, casting="unsafe")
        self._own(index, new)

    def _own(self, index: int, arr: np.ndarray) -> None:
        self._in[index] = Tensor.wrap(arr, self._types[index])
        self._checked[index] = True
        self._batched.pop(index, None)

    def set_input(self, index: int, tensor: Tensor) -> None:
        """Use ``tensor`` (as it is) for input ``index``; its element type and shape must fit the input."""
        if not 0 <= index < len(self.inputs):
            raise IndexError(f"Input index {index} is out of range: the model has {len(self.inputs)} inputs")
        port = self.inputs[index]
        if _is_passthrough(port):
            self._raw[index] = tensor
            return
        self._device_in.pop(index, None)
        if isinstance(tensor, RemoteTensor):
            self._put_device(index, tensor)
            return
        if not isinstance(tensor, Tensor):
            raise TypeError(f"set_input_tensor takes a Tensor, not {type(tensor).__name__}")
        convert_input(port, index, tensor)  # checks the element type and shape
        self._in[index] = tensor
        self._checked[index] = False
        self._batched.pop(index, None)

    def set_batched(self, index: int, tensors: Any) -> None:
        """Input ``index`` is gathered from ``tensors``, one per item of its batch dimension, at each run."""
        tensors = list(tensors)
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise InputError("set_input_tensors / set_tensors take a non-empty list of Tensors")
        if len(tensors) == 1:
            self.set_input(index, tensors[0])
            return
        port = self.inputs[index]
        label = _port_label(port, index)
        layout = port.node.get_layout() if hasattr(port.node, "get_layout") else None
        shape = port.partial_shape
        if layout is None or not layout.has_name("N") or shape.rank.is_dynamic:
            raise InputError(f"Batched tensors for {label} need a layout with a batch dimension 'N' (e.g. "
                             "parameter.set_layout(Layout('N...'))) and a static rank")
        axis = layout.get_index_by_name("N") % len(shape)
        batch = shape[axis]
        if batch.is_static and batch.get_length() != len(tensors):
            raise InputError(f"{label} has batch {batch.get_length()}; got {len(tensors)} tensors")
        first = tensors[0].data.shape
        for t in tensors:
            if t.element_type != port.element_type:
                raise InputError(f"Batched tensor of {label} is {t.element_type.get_type_name()}, the input is "
                                 f"{port.element_type.get_type_name()}")
            if len(t.data.shape) != len(shape) or t.data.shape[axis] != 1 or t.data.shape != first:
                raise InputError(f"Batched tensors of {label} must all have shape {list(first)} with 1 at the batch "
                                 f"axis {axis}; got {list(t.data.shape)}")
        gathered = list(first)
        gathered[axis] = len(tensors)
        if not _fits(shape, tuple(gathered)):
            raise InputError(f"Batched tensors of {label} make shape {gathered}, the model expects {shape}")
        self._batched[index] = (axis, tensors)
        self._in[index] = None
        self._checked[index] = False

    def input_tensor(self, index: int) -> Tensor:
        """Input ``index``'s tensor (handed out: the user may reshape or refill it, so it is checked at each run)."""
        t = self._input(index)
        self._checked[index] = False
        return t

    def _input(self, index: int) -> Tensor:
        if index in self._device_in:
            return self._device_in[index]
        if index in self._batched:
            raise InputError(BATCHED_GET)
        if index in self._raw:
            raise InputError(f"{_port_label(self.inputs[index], index)} takes a sequence or optional value, "
                             "not a tensor")
        t = self._in[index]
        if t is None:
            t = self._in[index] = Tensor.wrap(_zeros(self.inputs[index]), self._types[index])
            self._checked[index] = True
        return t

    def input_arrays(self) -> list[Any]:
        """One value per input for the device request: the tensors' arrays (batches gathered), checked."""
        arrays = []
        for i in range(len(self.inputs)):
            if i in self._device_in:
                arrays.append(self._device_in[i])
                continue
            t = self._in[i]
            if t is not None and self._checked[i]:
                arrays.append(tensor_values(t))
                continue
            if i in self._raw:
                value = self._raw[i]
            elif i in self._batched:
                axis, tensors = self._batched[i]
                value = np.concatenate([tensor_values(t) for t in tensors], axis=axis)
            else:
                value = tensor_values(self._input(i))
            arrays.append(self.checks.convert(i, value))
        return arrays

    # --- outputs ----------------------------------------------------------------------
    def _values(self) -> list[Any]:
        if self._out_values is None:
            self._out_values = [_zeros(p) for p in self.outputs]
        return self._out_values

    def output_tensor(self, index: int) -> Tensor:
        """Output ``index``'s tensor; from now on each run writes its result into it."""
        t = self._out_held[index]
        if t is None:
            value = self._values()[index]
            if isinstance(value, RemoteTensor):
                return value  # type: ignore[return-value] - a device output: the request's own remote tensor
            if not isinstance(value, np.ndarray):
                raise InputError(f"Output {index} is a {type(value).__name__} (an ONNX sequence or optional "
                                 "value), not a tensor; read it from the results")
            t = self._out_held[index] = Tensor.wrap(value, self.outputs[index].element_type)
        return t

    def set_output(self, index: int, tensor: Tensor) -> None:
        """Write output ``index``'s results into ``tensor`` (element type equal, shape compatible)."""
        if not 0 <= index < len(self.outputs):
            raise IndexError(f"Output index {index} is out of range: the model has {len(self.outputs)} outputs")
        port = self.outputs[index]
        if isinstance(tensor, RemoteTensor) and self.device_memory:
            self._out_held[index] = tensor  # type: ignore[assignment] - results are copied into it on the device
            return
        if not isinstance(tensor, Tensor):
            raise TypeError(f"set_output_tensor takes a Tensor, not {type(tensor).__name__}")
        want = port.element_type
        if want.is_static() and tensor.element_type != want:
            raise InputError(f"Output {index} is {want.get_type_name()}; cannot write it into a "
                             f"{tensor.element_type.get_type_name()} tensor")
        if tensor.data.size and not _fits(port.partial_shape, tensor.data.shape):
            raise InputError(f"Output {index} has shape {port.partial_shape}; cannot write it into a tensor of "
                             f"shape {list(tensor.data.shape)}")
        self._out_held[index] = tensor
        self._values()[index] = tensor_values(tensor)

    def store_outputs(self, outs: list[Any], inputs: list[Any], share: bool | None) -> list[Any]:
        """Keep a run's outputs as the request's; returns the values to give the caller (``share``: views of the
        request's tensors; False: arrays the request does not hold; None: nothing)."""
        values = self._values()
        given: list[Any] = []
        for i, o in enumerate(outs):
            if isinstance(o, np.generic):
                o = np.asarray(o)
            held = self._out_held[i]
            if isinstance(held, RemoteTensor):  # the user's device tensor for this output
                held.copy_from(o)
                values[i] = held
                given.append(held)
                continue
            if not isinstance(o, np.ndarray):  # an ONNX sequence / optional value, a device output
                values[i] = o
                self._out_held[i] = None
                given.append(o)
                continue
            # a kernel's own new array, which no input (nor anything else) shares: it may be handed over
            fresh = o.flags.owndata
            if fresh:
                for a in inputs:
                    if o is a:
                        fresh = False
                        break
            held = self._out_held[i]
            if held is not None:
                if tuple(held.shape) != o.shape:
                    held.set_shape(o.shape)
                mem = tensor_memory(held)
                src = packing.pack(o, self._out_types[i]) if packing.is_packed(self._out_types[i]) else o
                np.copyto(mem, src.reshape(mem.shape), casting="unsafe")
                values[i] = tensor_values(held)
                given.append(o if fresh else None)
            else:
                values[i] = o if fresh else np.array(o, copy=True)
                given.append(None)
        if share is None:
            return []
        # results hold the values as vinerun computes them: bf16 as ml_dtypes.bfloat16 and sub-byte types one
        # element per item (openvino returns the raw float16 bits / packed bytes its Tensor.data shows)
        if share:
            return [v[...] if isinstance(v, np.ndarray) else v for v in values]
        return [g if g is not None else (v.copy() if isinstance(v, np.ndarray) else v)
                for g, v in zip(given, values, strict=True)]

    def output_buffers(self) -> list[np.ndarray] | None:
        """The arrays a run may write the outputs into in place, which then are the request's results (the
        memory of the tensors handed out or set, else the request's own), or None where an output has no such
        array (a device tensor, packed sub-byte elements, a value that is no array)."""
        values = self._values()
        buffers = []
        for i, held in enumerate(self._out_held):
            if held is None:
                buffer = values[i]
            elif isinstance(held, RemoteTensor) or packing.is_packed(self._out_types[i]):
                return None
            else:
                buffer = tensor_memory(held)
            if not isinstance(buffer, np.ndarray):
                return None
            buffers.append(buffer)
        return buffers

    def output_values(self, copy: bool) -> list[Any]:
        """The request's output values (copies of the arrays if ``copy``)."""
        values = [tensor_values(t) if isinstance(t, Tensor) else v
                  for t, v in zip(self._out_held, self._values(), strict=True)]
        return [v.copy() if copy and isinstance(v, np.ndarray) else v for v in values]


_KDL_CPU = 1  # DLPack's device type of host memory
_DEVICE_TYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int8": "i8",
                 "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64", "bool": "boolean"}


def is_device_tensor(value: Any) -> bool:
    """A RemoteTensor, or a DLPack tensor (torch, CuPy, JAX...) whose memory is not the host's."""
    if isinstance(value, RemoteTensor):
        return True
    if isinstance(value, (np.ndarray, Tensor)) or not hasattr(value, "__dlpack_device__"):
        return False
    try:
        return int(value.__dlpack_device__()[0]) != _KDL_CPU
    except Exception:  # noqa: BLE001 - not a DLPack producer after all
        return False


def device_tensor_meta(value: Any) -> tuple[tuple[int, ...], Type]:
    """(shape, element type) of a device tensor."""
    if isinstance(value, RemoteTensor):
        return tuple(int(d) for d in value.get_shape()), value.get_element_type()
    name = str(value.dtype).rsplit(".", 1)[-1]
    if name not in _DEVICE_TYPES:
        raise InputError(f"Device tensors of {value.dtype} are not supported; types: {sorted(_DEVICE_TYPES)}")
    return tuple(int(d) for d in value.shape), Type(_DEVICE_TYPES[name])


def _device_label(value: Any) -> str:
    device = getattr(value, "device", None)
    return str(device) if device is not None else type(value).__name__
