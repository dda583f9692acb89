"""``InferRequest``: OpenVINO's request API over a device's sync request."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vinerun.errors import InputError, RequestBusyError, RequestCancelledError
from vinerun.ir.node import Output
from vinerun.ir.tensor import Tensor
from vinerun.plugin_api.async_infer_request import IAsyncInferRequest
from vinerun.plugin_api.infer_request import ProfilingInfo
from vinerun.plugin_api.variable_state import VariableState
from vinerun.runtime.inputs import InputPorts, convert_input
from vinerun.runtime.results import InferResult

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
        self._inputs: dict[int, Any] = {}
        self._outputs: list[Any] | None = None
        self._latency_ms = 0.0
        self.userdata: Any = None
        self._async: IAsyncInferRequest | None = None
        self._callback: Callable[[Any], Any] | None = None
        #: set by AsyncInferQueue: called with the error (or None) instead of the user callback
        self._done_hook: Callable[[BaseException | None], None] | None = None
        self._t0 = 0.0
        self._ports = (compiled.inputs, compiled.outputs)  # a compiled model's ports never change: read once
        self._checks = InputPorts(compiled.inputs)

    @property
    def model_inputs(self) -> list[Output]:
        return self._ports[0]

    @property
    def model_outputs(self) -> list[Output]:
        return self._ports[1]

    input_tensors = property(lambda self: [self.get_input_tensor(i) for i in range(len(self.model_inputs))])
    output_tensors = property(lambda self: [self.get_output_tensor(i) for i in range(len(self.model_outputs))])

    def get_compiled_model(self) -> CompiledModel:
        return self._compiled

    # --- running -----------------------------------------------------------------------
    def infer(self, inputs: Any = None, share_inputs: bool = False, share_outputs: bool = False,
              decode_strings: bool = True) -> InferResult:
        """Run synchronously; returns outputs keyed by port, index or name."""
        self._check_idle()
        arrays = self._checks.normalize(inputs, self._inputs)
        t0 = time.perf_counter()
        outs = self._impl.infer(arrays)
        self._latency_ms = (time.perf_counter() - t0) * 1e3
        self._inputs = {i: a for i, a in enumerate(arrays)}
        if not share_outputs:
            outs = [o.copy() if hasattr(o, "copy") and hasattr(o, "dtype") and not o.flags.owndata else o for o in outs]
        self._outputs = outs
        return InferResult(self.model_outputs, outs)

    # --- asynchronous ------------------------------------------------------------------
    def start_async(self, inputs: Any = None, userdata: Any = None, share_inputs: bool = False) -> None:
        """Start an inference and return at once; it runs on one of the compiled model's streams.

        Input errors raise here. When it finishes, the callback (:meth:`set_callback`) is called with
        ``userdata`` (this call's, else the one given to ``set_callback``); :meth:`wait` returns after it.
        """
        self._check_idle()
        arrays = self._checks.normalize(inputs, self._inputs)
        if userdata is not None:
            self.userdata = userdata
        if self._async is None:
            self._async = self._compiled._impl.create_async_infer_request(self._impl)
            self._async.on_complete = self._on_complete
        self._inputs = {i: a for i, a in enumerate(arrays)}
        self._t0 = time.perf_counter()
        self._async.start_async(arrays)

    def _on_complete(self, error: BaseException | None) -> None:
        """In the worker thread, after the last stage: keep the outputs, then call back."""
        self._latency_ms = (time.perf_counter() - self._t0) * 1e3
        if error is None and self._async is not None:
            self._outputs = [o.copy() if hasattr(o, "flags") and not o.flags.owndata else o
                             for o in self._async.outputs]
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
        if self._async is not None:
            self._async.wait()

    def wait_for(self, timeout: int) -> bool:
        """Wait at most ``timeout`` milliseconds; ``True`` if the inference is done (or none was started)."""
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
    def results(self) -> InferResult:
        if self._outputs is None:
            raise RuntimeError("No results yet: call infer() first")
        return InferResult(self.model_outputs, self._outputs)

    @property
    def latency(self) -> float:
        """Duration of the last inference in milliseconds."""
        return self._latency_ms

    # --- tensors -----------------------------------------------------------------------
    def _output_index(self, key: Any) -> int:
        if isinstance(key, int):
            if not 0 <= key < len(self.model_outputs):
                raise IndexError(f"Output index {key} is out of range")
            return key
        return InferResult(self.model_outputs, [None] * len(self.model_outputs))._index(key)

    def _is_output_key(self, key: Any) -> bool:
        try:
            self._checks.index(key)
            return False
        except InputError:
            return True

    def get_tensor(self, key: Any) -> Tensor:
        if self._is_output_key(key):
            return self.get_output_tensor(self._output_index(key))
        return self.get_input_tensor(self._checks.index(key))

    def set_tensor(self, key: Any, tensor: Tensor) -> None:
        if self._is_output_key(key):
            raise InputError(f"{key!r} is not an input of this model; output tensors are allocated by vinerun")
        self.set_input_tensor(self._checks.index(key), tensor)

    def set_tensors(self, inputs: dict[Any, Tensor]) -> None:
        for k, v in inputs.items():
            self.set_tensor(k, v)

    def get_input_tensor(self, index: int = 0) -> Tensor:
        if index in self._inputs:
            return Tensor.wrap(self._inputs[index])
        port = self.model_inputs[index]
        if port.partial_shape.is_static and port.element_type.is_static():
            t = Tensor(port.element_type, list(port.get_shape()))
            self._inputs[index] = t.data
            return t
        raise RuntimeError(f"Input {index} has a dynamic shape and no tensor was set yet")

    def set_input_tensor(self, index_or_tensor: Any, tensor: Tensor | None = None) -> None:
        index, tensor = (0, index_or_tensor) if tensor is None else (index_or_tensor, tensor)
        self._check_idle()
        port = self.model_inputs[index]
        self._inputs[index] = convert_input(port, index, tensor)

    def set_input_tensors(self, tensors: Any) -> None:
        items = tensors.items() if isinstance(tensors, dict) else enumerate(tensors)
        for i, t in items:
            self.set_input_tensor(i, t)

    def get_output_tensor(self, index: int = 0) -> Tensor:
        if self._outputs is None:
            raise RuntimeError("No output tensors yet: call infer() first")
        return Tensor.wrap(self._outputs[index])

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
