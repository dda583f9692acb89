"""The HETERO plugin: splits a model across devices by what each device supports.

>>> core = ov.Core()
>>> compiled = core.compile_model(speech, "HETERO:GNA,CPU", {"HETERO_DUMP_GRAPH_DOT": True})
>>> compiled.get_property("EXECUTION_DEVICES")
['GNA', 'CPU']
"""

from __future__ import annotations

from typing import Any

from vinerun.errors import DeviceError, PropertyError, VinerunError
from vinerun.ir.model import Model, node_control_deps
from vinerun.ir.node import Node
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugin_api.property_table import CACHE_KEYS, PropertyTable, PropertyValues
from vinerun.transformations import common_cleanup
from vinerun.virtual.forwarding import DEVICE_PROPERTIES, device_keys, with_device_properties
from vinerun.virtual.hetero import config as cfg
from vinerun.virtual.hetero.affinity import assign_affinities, full_affinity
from vinerun.virtual.hetero.compiled_model import HeteroCompiledModel, with_context
from vinerun.virtual.hetero.dot import write_dot_files
from vinerun.virtual.hetero.partition import Subgraph, partition
from vinerun.virtual.hetero.submodels import build_split


class HeteroPlugin(IPlugin):
    """The ``HETERO`` device: per-node affinity from each device's ``query_model`` in priority order
    (or ``rt_info["affinity"]``), subgraphs compiled on their devices through the Core.

    >>> core.query_model(model, "HETERO:GNA,CPU")["softmax"]
    'CPU'
    """

    device_name = "HETERO"
    #: a virtual device: not listed in AVAILABLE_DEVICES, not cached itself (its devices' compiles are)
    virtual = True

    def property_table(self) -> PropertyTable:
        return cfg.PLUGIN_TABLE

    # --- config ------------------------------------------------------------------------
    def _split_config(self, config: dict[str, Any]) -> tuple[PropertyValues, dict[str, Any]]:
        """HETERO's own values, and the keys for the devices (PERF_COUNT and an explicit hint go on too)."""
        own = {k: v for k, v in config.items() if k in cfg.PLUGIN_TABLE}
        values = self.compile_config(own)
        forwarded = {k: v for k, v in config.items() if k not in cfg.OWN}
        if values.get("PERF_COUNT"):
            forwarded["PERF_COUNT"] = True
        if values.is_set("PERFORMANCE_HINT"):
            forwarded["PERFORMANCE_HINT"] = values.get("PERFORMANCE_HINT")
        return values, forwarded

    def _device_config(self, device: str, forwarded: dict[str, Any]) -> dict[str, Any]:
        supported = self._services().plugin(device).supported_properties()
        return with_device_properties({k: v for k, v in forwarded.items() if supported.get(k) == "RW"}, forwarded)

    def _resolved_device_configs(self, devices: list[str], forwarded: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """What each device was given (plain keys it supports, then its ``DEVICE_PROPERTIES`` entry): an export
        stores it as ``DEVICE_PROPERTIES``, so an import compiles every subgraph with the same config."""
        out = {}
        for d in devices:
            config = self._device_config(d, forwarded)
            nested = config.pop(DEVICE_PROPERTIES, None) or {}
            entry = nested.get(d, {}) if isinstance(nested, dict) else {}
            out[d] = {**config, **(entry if isinstance(entry, dict) else {})}
        return out

    def _check_forwarded(self, devices: list[str], forwarded: dict[str, Any]) -> None:
        services = self._services()
        known = set(cfg.PLUGIN_TABLE.props)
        for d in devices:
            known |= {k for k, m in services.plugin(d).supported_properties().items() if m == "RW"}
        unknown = sorted(set(device_keys(forwarded)) - known)
        if unknown:
            raise PropertyError(f"Unsupported property {', '.join(unknown)} by HETERO: neither HETERO nor "
                                f"its devices ({','.join(devices)}) support it")

    def _services(self) -> Any:
        if self.core is None:
            raise DeviceError("HETERO compiles on other devices through a Core: use "
                              "Core().compile_model(model, 'HETERO:GNA,CPU')")
        return self.core

    # --- affinity and split ------------------------------------------------------------
    def _affinities(self, model: Model, devices: list[str], forwarded: dict[str, Any]) -> dict[Node, str]:
        services = self._services()
        return assign_affinities(model.get_ordered_ops(), devices,
                                 lambda d: services.query_model(model, d, self._device_config(d, forwarded)))

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        """``{node: device}`` as HETERO would place the nodes (Parameters, Constants, Results included)."""
        values, forwarded = self._split_config(config)
        devices = cfg.parse_priorities(values.get(cfg.PRIORITIES))
        self._check_forwarded(devices, forwarded)
        affinity = self._affinities(model, devices, forwarded)
        return {n.friendly_name: d for n, d in full_affinity(model.get_ordered_ops(), affinity).items()}

    def compile_model(self, model: Model, config: dict[str, Any]) -> HeteroCompiledModel:
        values, forwarded = self._split_config(config)
        devices = cfg.parse_priorities(values.get(cfg.PRIORITIES))
        self._check_forwarded(devices, forwarded)
        work = model.clone()
        common_cleanup()(work)  # fold constants first: a shape input must not become a subgraph input
        affinity = self._affinities(work, devices, forwarded)
        subgraphs = split_by_affinity(work, affinity)
        split = build_split(work, subgraphs)
        if cfg.dump_requested(values.get(cfg.DUMP_DOT)):
            write_dot_files(work, full_affinity(work.get_ordered_ops(), affinity), subgraphs, devices)
        services = self._services()
        compiled = []
        for i, sub in enumerate(split.submodels):
            try:
                device_config = self._device_config(sub.device, forwarded)
                compiled.append(services.compile_model(sub.model, sub.device, device_config))
            except VinerunError as e:
                raise with_context(e, f"HETERO: compiling subgraph{i} on {sub.device} failed") from e
        stored = self._resolved_device_configs(devices, forwarded)
        for sub, device_model in zip(split.submodels, compiled, strict=True):
            stored[sub.device].update(_compiled_with(device_model))
        return HeteroCompiledModel(work, split, compiled, values, stored)

    def import_model(self, model: Model, config: dict[str, Any]) -> HeteroCompiledModel:
        """A blob stores the whole graph, HETERO's config and each device's (as ``DEVICE_PROPERTIES``); the split
        and the devices' compiles are redone with them, so results are the exported model's bit for bit."""
        return self.compile_model(model, config)


def _compiled_with(compiled: Any) -> dict[str, Any]:
    """What a device's own export would store of its compile config (a GNA model's includes every key that
    changes compilation, set or default, so an importing Core's own GNA properties cannot change it)."""
    config = {k: v for k, v in getattr(compiled, "config", {}).items() if k not in CACHE_KEYS}
    return {**config, **getattr(compiled, "compile_config", {})}


def split_by_affinity(model: Model, affinity: dict[Node, str]) -> list[Subgraph[Node]]:
    """The subgraphs of ``model`` for ``affinity`` (see :mod:`.partition`)."""
    order = [n for n in model.get_ordered_ops() if n in affinity]
    partners: dict[tuple[str, str], Node] = {(n.type_name, n.get_variable_id()): n for n in order
                                             if n.type_name in ("ReadValue", "Assign")}

    def producers(n: Node) -> list[Node]:
        deps = [o.node for o in n.input_values() if o is not None] + node_control_deps(n)
        return [d for d in deps if d in affinity]

    def must_join(n: Node) -> Node | None:
        other = {"ReadValue": "Assign", "Assign": "ReadValue"}.get(n.type_name)
        return None if other is None else partners.get((other, n.get_variable_id()))

    return partition(order, affinity, producers, must_join)
