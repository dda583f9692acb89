"""HETERO compiled model: one compiled submodel per subgraph, run in order, linked by tensors.

A synchronous inference runs the submodels one after another in the calling thread. An
asynchronous one is a pipeline with one stage per submodel, each on its device's executor (as
OpenVINO's hetero plugin chains its subrequests), so requests in flight overlap across devices.

>>> compiled = core.compile_model(model, "HETERO:GNA,CPU")
>>> compiled.get_property("HETERO_NUMBER_OF_SUBMODELS")
2
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from vinerun.errors import InputError, VinerunError
from vinerun.ir.model import Model
from vinerun.plugin_api.async_infer_request import IAsyncInferRequest
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.property_table import PropertyValues
from vinerun.plugin_api.variable_state import VariableState
from vinerun.virtual.forwarding import DEVICE_PROPERTIES
from vinerun.virtual.hetero.config import COMPILED_TABLE, NUM_SUBMODELS, TUNABLE
from vinerun.virtual.hetero.submodels import Split


class HeteroCompiledModel(ICompiledModel):
    """The split model: ``split`` says which tensors each submodel reads and writes; ``compiled[i]`` is
    ``split.submodels[i]`` compiled on its device.

    >>> impl = core.compile_model(model, "HETERO:GNA,CPU")._impl
    >>> [(s.device, len(s.input_keys)) for s in impl.split.submodels]
    [('GNA', 1), ('CPU', 1)]
    """

    def __init__(self, model: Model, split: Split, compiled: list[ICompiledModel], values: PropertyValues,
                 device_configs: dict[str, dict[str, Any]] | None = None):
        super().__init__(model, "HETERO")
        self.split = split
        self.compiled = compiled
        #: the read-write values it was compiled with (what export_model stores)
        self.config: dict[str, Any] = {p.name: values.get(p.name) for p in TUNABLE}
        self.properties = PropertyValues(COMPILED_TABLE, dict(self.config), computed={
            "NETWORK_NAME": lambda: self.model.friendly_name,
            "OPTIMAL_NUMBER_OF_INFER_REQUESTS": self._optimal_requests,
            "EXECUTION_DEVICES": lambda: list(dict.fromkeys(s.device for s in self.split.submodels)),
            NUM_SUBMODELS: lambda: len(self.split.submodels),
        })
        if device_configs:  # exported with the rest: what each device compiled with
            self.config[DEVICE_PROPERTIES] = device_configs

    def _optimal_requests(self) -> int:
        """The most any submodel's device wants in flight (the pipeline keeps every device busy)."""
        counts = []
        for c in self.compiled:
            try:
                counts.append(int(c.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
            except (VinerunError, TypeError, ValueError):
                counts.append(1)
        return max(counts, default=1)

    def create_sync_infer_request(self) -> HeteroInferRequest:
        return HeteroInferRequest(self)

    def create_async_infer_request(self, sync: ISyncInferRequest) -> IAsyncInferRequest:
        """A pipeline of one stage per submodel, each on its device's executor."""
        if not isinstance(sync, HeteroInferRequest):
            return super().create_async_infer_request(sync)
        request = IAsyncInferRequest(sync, self.task_executor())
        last = len(self.compiled) - 1
        stages = []
        for i, compiled in enumerate(self.compiled):
            def stage(i: int = i) -> None:
                if i == 0:
                    sync.begin(request.inputs)
                sync.run_submodel(i)
                if i == last:
                    request.outputs = sync.end()
            stages.append((compiled.task_executor(), stage))
        if stages:
            request.pipeline = stages
        return request

    def get_property(self, key: str) -> Any:
        return self.properties.get(key)

    def get_runtime_model(self) -> Model:
        return self.model


class HeteroInferRequest(ISyncInferRequest):
    """One request per submodel; tensors between them live in a dict keyed by producer and port.

    >>> request = HeteroInferRequest(compiled_impl)
    >>> request.infer([features])           # runs subgraph0 on GNA, then subgraph1 on CPU
    """

    def __init__(self, compiled: HeteroCompiledModel):
        self.compiled = compiled
        self.requests = [c.create_sync_infer_request() for c in compiled.compiled]
        self._values: dict[Any, Any] = {}

    def begin(self, inputs: list[Any]) -> None:
        split = self.compiled.split
        if len(inputs) != len(split.parameter_keys):
            raise InputError(f"HETERO model '{self.compiled.model.friendly_name}' takes {len(split.parameter_keys)} "
                             f"inputs, got {len(inputs)}")
        self._values = dict(split.constants)
        self._values.update(zip(split.parameter_keys, inputs, strict=True))

    def run_submodel(self, index: int) -> None:
        sub = self.compiled.split.submodels[index]
        try:
            outs = self.requests[index].infer([self._values[k] for k in sub.input_keys])
        except VinerunError as e:
            raise with_context(e, f"HETERO subgraph{index} on {sub.device}") from e
        self._values.update(zip(sub.output_keys, outs, strict=True))

    def end(self) -> list[Any]:
        outs = [self._values[k] for k in self.compiled.split.output_keys]
        self._values = {}
        return outs

    def infer(self, inputs: list[Any]) -> list[Any]:
        self.begin(inputs)
        for i in range(len(self.requests)):
            self.run_submodel(i)
        return self.end()

    def cancel(self) -> None:
        for r in self.requests:
            r.cancel()

    def get_profiling_info(self) -> list[ProfilingInfo]:
        """Every submodel's counters: node names prefixed ``subgraph<i>: `` (as OpenVINO), exec types
        prefixed with the device that ran the node (``GNA:...``, ``CPU:...``)."""
        out = []
        for i, (sub, request) in enumerate(zip(self.compiled.split.submodels, self.requests, strict=True)):
            for rec in request.get_profiling_info():
                out.append(replace(rec, node_name=f"subgraph{i}: {rec.node_name}",
                                   exec_type=f"{sub.device}:{rec.exec_type}"))
        return out

    def query_state(self) -> list[VariableState]:
        """The variables of every submodel (each lives in exactly one)."""
        return [s for r in self.requests for s in r.query_state()]


def with_context(error: VinerunError, where: str) -> VinerunError:
    """``error`` of the same type with ``where`` in front of its message."""
    try:
        return type(error)(f"{where}: {error}")
    except TypeError:
        return error

