"""``InferRequest``: OpenVINO's request API over a device's sync request.

As in OpenVINO, a request holds one tensor per model input and output from its creation (static
shapes allocated, dynamic dimensions 0). ``infer`` puts the call's data into the input tensors --
copied into them, or, with ``share_inputs=True``, the caller's array itself where it fits (see
:mod:`vinerun.runtime.request_tensors`) -- runs, and returns copies of the output tensors (views of
them with ``share_outputs=True``). A tensor the user set or was given (``get_output_tensor``...)
receives every later result in place.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from vinerun.errors import InputError, RequestBusyError, RequestCancelledError
from vinerun.ir.node import Output
from vinerun.ir.tensor import Tensor, strings_as
from vinerun.ir.types import Type
from vinerun.plugin_api.async_infer_request import IAsyncInferRequest
from vinerun.plugin_api.infer_request import ProfilingInfo
from vinerun.plugin_api.variable_state import VariableState
from vinerun.runtime.inputs import InputPorts
from vinerun.runtime.request_tensors import RequestTensors
from vinerun.runtime.results import OVDict

if TYPE_CHECKING:
    from vinerun.runtime.compiled_model import CompiledModel

log = logging.getLogger("vinerun")


class InferRequest:
    """One request: set inputs, ``infer()``, read outputs.

    >>> request = compiled.create_infer_request()
    >>> result = request.infer({"data": x})
    >>> request.get_output_tensor(0).data

    Asynchronously (see :meth:`start_async`):

    >>> request.set_callback(lambda userdata: print("done", userdata), "first")
    >>> request.start_async({"data": x})
    >>> request.wait()
    """

    def __init__(self, compiled: CompiledModel):
        self._compiled = compiled
        self._impl = compiled._impl.create_sync_infer_request()
        self._latency_ms = 0.0
        self.userdata: Any = None
        self._async: IAsyncInferRequest | None = None
        self._callback: Callable[[Any], Any] | None = None
        #: set by AsyncInferQueue: called with the error (or None) instead of the user callback
        self._done_hook: Callable[[BaseException | None], None] | None = None
        self._t0 = 0.0
        self._ports = (compiled.inputs, compiled.outputs)  # a compiled model's ports never change: read once
        self._checks = InputPorts(compiled.inputs)
        self._tensors = RequestTensors(self._checks, compiled.outputs,
                                       bool(getattr(compiled._impl, "takes_device_tensors", False)))
        self._started: list[Any] = []  # the input arrays of the asynchronous run in flight
        #: set by an AsyncInferQueue running this request in a device's request loop: waits for its run (at most
        #: the seconds given, None: no limit) and says whether it is done
        self._queue_wait: Callable[[float | None], bool] | None = None
        #: and the duration of its last run there (``latency`` reads it while ``_latency_in_loop``)
        self._queue_latency: Callable[[], float] | None = None
        self._latency_in_loop = False
        self._string_outputs = any(p.get_element_type() == Type.string for p in compiled.outputs)

    @property
    def model_inputs(self) -> list[Output]:
        return self._ports[0]

    @property
    def model_outputs(self) -> list[Output]:
        return self._ports[1]

    @property
    def input_tensors(self) -> list[Tensor]:
        return [self.get_input_tensor(i) for i in range(len(self.model_inputs))]

    @property
    def output_tensors(self) -> list[Tensor]:
        return [self.get_output_tensor(i) for i in range(len(self.model_outputs))]

    def get_compiled_model(self) -> CompiledModel:
        return self._compiled

    # --- running -----------------------------------------------------------------------
    def infer(self, inputs: Any = None, share_inputs: bool = False, share_outputs: bool = False, *,
              decode_strings: bool = True) -> OVDict:
        """Run synchronously; returns the outputs keyed by port, index or name (an :class:`OVDict`).

        ``inputs``: a dict keyed by input index, name or port, a list or tuple in input order, or one value for a
        single-input model; values are arrays (or anything ``np.asarray`` takes), scalars or Tensors. Inputs left
        out keep the request's current tensors. ``share_inputs=False`` copies arrays into the request's tensors;
        ``True`` lets the request use a C-contiguous, writable array of the input's element type as it is (others
        are still copied). Tensors are always used as they are. ``share_outputs=True`` returns views of the
        request's output tensors instead of copies (the next inference may overwrite them).
        """
        self._check_idle()
        self._tensors.put(inputs, share_inputs)
        arrays = self._tensors.input_arrays()
        t0 = time.perf_counter()
        outs = self._impl.infer(arrays)
        self._latency_ms = (time.perf_counter() - t0) * 1e3
        self._latency_in_loop = False
        values = self._tensors.store_outputs(outs, arrays, share_outputs)
        if self._string_outputs:
            values = _strings_decoded(self.model_outputs, values, decode_strings)
        return OVDict(self.model_outputs, values)

    # --- asynchronous ------------------------------------------------------------------
    def start_async(self, inputs: Any = None, userdata: Any = None, share_inputs: bool = False) -> None:
        """Start an inference and return at once; it runs on one of the compiled model's streams.

        Inputs are taken as :meth:`infer` takes them (copied unless ``share_inputs``: the caller may reuse its
        arrays at once); input errors raise here. When it finishes, the callback (:meth:`set_callback`) is called
        with ``userdata`` (this call's, else the one given to ``set_callback``); :meth:`wait` returns after it.
        """
        self._check_idle()
        self._tensors.put(inputs, share_inputs)
        arrays = self._tensors.input_arrays()
        if userdata is not None:
            if self._callback is None:
                warnings.warn("There is no callback function!", RuntimeWarning, stacklevel=2)
            else:
                self.userdata = userdata
        if self._async is None:
            self._async = self._compiled._impl.create_async_infer_request(self._impl)
            self._async.on_complete = self._on_complete
        self._started = arrays
        self._t0 = time.perf_counter()
        self._latency_in_loop = False
        self._async.start_async(arrays)

    def _start_in_loop(self, inputs: Any, share_inputs: bool) -> tuple[list[Any], list[np.ndarray] | None]:
        """Put ``inputs`` for a run in a device's request loop (see ``AsyncInferQueue``): the input arrays, and
        the arrays to write the outputs into (None where some output has none: the run goes through Python)."""
        self._check_idle()
        self._tensors.put(inputs, share_inputs)
        self._started = self._tensors.input_arrays()
        self._t0 = time.perf_counter()
        self._latency_in_loop = True
        return self._started, self._tensors.output_buffers()

    def _finish_in_loop(self, run: bool) -> None:
        """After a request loop's run (``run``: do it here, through the device's sync request, first)."""
        if run:  # the loop measured only the wait: the run is this one
            self._tensors.store_outputs(self._impl.infer(self._started), self._started, None)
            self._latency_ms = (time.perf_counter() - self._t0) * 1e3
            self._latency_in_loop = False
        self._started = []

    def _on_complete(self, error: BaseException | None) -> None:
        """In the worker thread, after the last stage: keep the outputs, then call back."""
        self._latency_ms = (time.perf_counter() - self._t0) * 1e3
        if error is None and self._async is not None:
            try:
                self._tensors.store_outputs(self._async.outputs, self._started, None)
            except BaseException as e:  # noqa: BLE001 - e.g. a user output tensor that cannot take the result
                error = e
        self._started = []
        if self._done_hook is not None:
            self._done_hook(error)
        elif error is None and self._callback is not None:
            self._callback(self.userdata)
        elif error is not None and self._callback is not None and not isinstance(error, RequestCancelledError):
            log.error("vinerun: asynchronous inference failed, the callback was not called (wait() raises it): "
                      "%s: %s", type(error).__name__, error)

    def wait(self) -> None:
        """Block until the inference started by :meth:`start_async` is done (callback included).

        Raises what went wrong: the inference error, ``RequestCancelledError`` after :meth:`cancel`, or
        ``CallbackError`` (with the callback's exception as cause). The error stays until the next start.
        """
        if self._queue_wait is not None:
            self._queue_wait(None)
        if self._async is not None:
            self._async.wait()

    def wait_for(self, timeout: int) -> bool:
        """Wait at most ``timeout`` milliseconds; ``True`` if the inference is done (or none was started)."""
        if self._queue_wait is not None and not self._queue_wait(timeout / 1e3):
            return False
        if self._async is None:
            return True
        return self._async.wait_for(timeout / 1e3)

    def cancel(self) -> None:
        """Cancel the inference in flight: :meth:`wait` then raises "Infer Request was canceled"."""
        if self._async is not None:
            self._async.cancel()

    def set_callback(self, callback: Callable[[Any], Any], userdata: Any = None) -> None:
        """``callback(userdata)`` runs in a worker thread after each successful asynchronous inference.

        An exception in it is logged and raised by the next :meth:`wait` as ``CallbackError``.
        """
        self._callback = callback
        self.userdata = userdata

    def _check_idle(self) -> None:
        if self._async is not None and self._async.busy:
            raise RequestBusyError("Infer request is busy: an asynchronous inference is running; call wait() first")

    @property
    def results(self) -> OVDict:
        """Copies of the output tensors (the last inference's results; the initial tensors before any)."""
        values = self._tensors.output_values(copy=True)
        if self._string_outputs:
            values = _strings_decoded(self.model_outputs, values, True)
        return OVDict(self.model_outputs, values)

    @property
    def latency(self) -> float:
        """Duration of the last inference in milliseconds."""
        if self._latency_in_loop and self._queue_latency is not None:
            return self._queue_latency()
        return self._latency_ms

    # --- tensors -----------------------------------------------------------------------
    def get_tensor(self, key: Any) -> Tensor:
        """The input or output tensor of ``key`` (a tensor name, a port, or an input index)."""
        is_input, index = self._tensors.find(key)
        return self.get_input_tensor(index) if is_input else self.get_output_tensor(index)

    def set_tensor(self, key: Any, tensor: Tensor) -> None:
        """Use ``tensor`` for the input or output ``key``: inputs are read from it, outputs written into it."""
        is_input, index = self._tensors.find(key)
        if is_input:
            self.set_input_tensor(index, tensor)
        else:
            self.set_output_tensor(index, tensor)

    def set_tensors(self, inputs: Any, tensors: list[Tensor] | None = None) -> None:
        """``set_tensors({key: tensor, ...})``; or ``set_tensors(key, [tensor, ...])``: one input's batch given as
        one tensor per item (see :meth:`set_input_tensors`)."""
        if tensors is None:
            for k, v in dict(inputs).items():
                self.set_tensor(k, v)
            return
        is_input, index = self._tensors.find(inputs)
        if not is_input:
            raise InputError(f"set_tensors with a list of tensors takes a model input; {inputs!r} is an output")
        self._check_idle()
        self._tensors.set_batched(index, tensors)

    def get_input_tensor(self, index: int | None = None) -> Tensor:
        return self._tensors.input_tensor(self._single(index, len(self.model_inputs), "inputs"))

    def set_input_tensor(self, index_or_tensor: Any, tensor: Tensor | None = None) -> None:
        """``set_input_tensor(tensor)`` (single-input model) or ``set_input_tensor(index, tensor)``."""
        if tensor is None:
            index, tensor = self._single(None, len(self.model_inputs), "inputs"), index_or_tensor
        else:
            index = index_or_tensor
        self._check_idle()
        self._tensors.set_input(int(index), tensor)

    def set_input_tensors(self, inputs: Any, tensors: list[Tensor] | None = None) -> None:
        """``{index: tensor}``; or a batch as one tensor per item: ``set_input_tensors([t0, t1, ...])`` for a
        single-input model, ``set_input_tensors(index, [t0, t1, ...])`` otherwise. The input needs a layout
        with a batch dimension ``N``; each tensor holds one item (``N`` = 1)."""
        self._check_idle()
        if isinstance(inputs, dict):
            for i, t in inputs.items():
                self._tensors.set_input(int(i), t)
        elif tensors is None:
            self._tensors.set_batched(self._single(None, len(self.model_inputs), "inputs"), inputs)
        else:
            self._tensors.set_batched(int(inputs), tensors)

    def get_output_tensor(self, index: int | None = None) -> Tensor:
        return self._tensors.output_tensor(self._single(index, len(self.model_outputs), "outputs"))

    def set_output_tensor(self, index_or_tensor: Any, tensor: Tensor | None = None) -> None:
        """``set_output_tensor(tensor)`` (single-output model) or ``set_output_tensor(index, tensor)``: the
        results of that output are written into ``tensor``."""
        if tensor is None:
            index, tensor = self._single(None, len(self.model_outputs), "outputs"), index_or_tensor
        else:
            index = index_or_tensor
        self._check_idle()
        self._tensors.set_output(int(index), tensor)

    def set_output_tensors(self, outputs: dict[int, Tensor]) -> None:
        for i, t in outputs.items():
            self.set_output_tensor(int(i), t)

    @staticmethod
    def _single(index: int | None, count: int, what: str) -> int:
        """``index``, or 0 when none is given and the model has exactly one of ``what``."""
        if index is not None:
            if not -count <= int(index) < count:
                raise IndexError(f"Index {index} is out of range: the model has {count} {what}")
            return int(index) % count
        if count != 1:
            raise InputError(f"The model has {count} {what}: pass an index")
        return 0

    # --- profiling and state -----------------------------------------------------------
    def get_profiling_info(self) -> list[ProfilingInfo]:
        return self._impl.get_profiling_info()

    profiling_info = property(get_profiling_info)

    def query_state(self) -> list[VariableState]:
        """One :class:`VariableState` per model variable (empty for a model without state)."""
        return self._impl.query_state()

    def reset_state(self) -> None:
        """Reset every variable to its initial value (the ReadValue's init, or zeros)."""
        self._impl.reset_state()

    def __repr__(self) -> str:
        ins = "\n".join(repr(p) for p in self.model_inputs)
        outs = "\n".join(repr(p) for p in self.model_outputs)
        return f"<InferRequest:\ninputs[\n{ins}\n]\noutputs[\n{outs}\n]>"


def _strings_decoded(ports: list[Output], values: list[Any], decode: bool) -> list[Any]:
    """String outputs as openvino returns them: ``<U`` arrays (``decode_strings=True``) or ``|S`` (UTF-8)."""
    return [strings_as(v, decode) if isinstance(v, np.ndarray) and p.get_element_type() == Type.string else v
            for p, v in zip(ports, values, strict=True)]
