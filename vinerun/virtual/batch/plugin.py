"""The BATCH plugin: ``BATCH:CPU(8)`` gathers 8 single requests into one execution on CPU.

>>> compiled = core.compile_model(cnn, "BATCH:CPU(8)")
>>> compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")     # 8 x the batched model's own
8
"""

from __future__ import annotations

import logging
from typing import Any

from vinerun.errors import DeviceError, VinerunError
from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugin_api.property_table import PropertyTable, PropertyValues
from vinerun.virtual.batch import config as cfg
from vinerun.virtual.batch.batchable import batched_model
from vinerun.virtual.batch.compiled_model import BatchCompiledModel

log = logging.getLogger("vinerun")


class BatchPlugin(IPlugin):
    """The ``BATCH`` device (OpenVINO's auto-batching): batches only models with a static batch
    dimension 0 of size 1; others run as is, with the reason logged and in
    ``AUTO_BATCH_DISABLED_REASON``.

    >>> core.compile_model(stateful_model, "BATCH:CPU(4)").get_property("AUTO_BATCH_DISABLED_REASON")
    'the model is stateful (its variables keep state per request)'
    """

    device_name = "BATCH"
    #: a virtual device: not listed in AVAILABLE_DEVICES, not cached itself (its devices' compiles are)
    virtual = True

    def property_table(self) -> PropertyTable:
        return cfg.PLUGIN_TABLE

    def _split_config(self, config: dict[str, Any]) -> tuple[PropertyValues, dict[str, Any]]:
        """BATCH's own values, and the config for the device (every key but BATCH's own)."""
        values = self.compile_config({k: v for k, v in config.items() if k in cfg.PLUGIN_TABLE})
        forwarded = {k: values.get(k) for k in values.explicit if k not in cfg.OWN}  # set on BATCH before
        forwarded.update({k: v for k, v in config.items() if k not in cfg.OWN})
        forwarded[cfg.ALLOW] = False  # the Core must not batch the device's compiles again
        return values, forwarded

    def _services(self) -> Any:
        if self.core is None:
            raise DeviceError("BATCH compiles on another device through a Core: use "
                              "Core().compile_model(model, 'BATCH:CPU(8)')")
        return self.core

    def _target(self, values: PropertyValues, model: Model) -> tuple[str, int]:
        spec = values.get(cfg.PRIORITIES) or values.get(cfg.DEVICE_CONFIG)
        if not spec:
            raise DeviceError("BATCH needs a device: compile for 'BATCH:CPU(8)' or set "
                              f"{cfg.DEVICE_CONFIG} (e.g. 'CPU(8)')")
        device, size = cfg.parse_device(spec)
        if size is None:
            size = self._optimal_batch_size(device, model)
        return device, size

    def _optimal_batch_size(self, device: str, model: Model) -> int:
        services = self._services()
        if "OPTIMAL_BATCH_SIZE" not in services.plugin(device).supported_properties():
            raise DeviceError(f"BATCH: {device} has no OPTIMAL_BATCH_SIZE; give the batch size, "
                              f"e.g. 'BATCH:{device}(8)'")
        return int(services.get_property(device, "OPTIMAL_BATCH_SIZE", {"MODEL_PTR": model}))

    def _batched_config(self, device: str, forwarded: dict[str, Any]) -> dict[str, Any]:
        """The device config of the batched model: as given, except that, on a device whose streams share its
        cores (the CPU) and unless streams or ``PERFORMANCE_HINT_NUM_REQUESTS`` were set, one batch in flight is
        the hint's parallel slack (``PERFORMANCE_HINT_NUM_REQUESTS=1``): the batch itself is the parallelism, so
        one stream with every core runs it rather than one core of several streams. A device that reports
        ``OPTIMAL_BATCH_SIZE`` (the GPU) keeps its hint's requests: its streams are device queues, and with
        batch x its requests in flight (OpenVINO's figure) the host fills the next batches while the device
        runs one on each stream."""
        out = dict(forwarded)
        keys = self._services().plugin(device).supported_properties()
        if "OPTIMAL_BATCH_SIZE" not in keys and not {"NUM_STREAMS", "PERFORMANCE_HINT_NUM_REQUESTS"} & set(out) \
                and keys.get("PERFORMANCE_HINT_NUM_REQUESTS") == "RW":
            out["PERFORMANCE_HINT_NUM_REQUESTS"] = 1
        return out

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        """What the device runs (BATCH changes no op)."""
        values, forwarded = self._split_config(config)
        device, _ = self._target(values, model)
        return self._services().query_model(model, device, forwarded)

    def compile_model(self, model: Model, config: dict[str, Any]) -> BatchCompiledModel:
        values, forwarded = self._split_config(config)
        device, size = self._target(values, model)
        services = self._services()
        single = services.compile_model(model, device, forwarded)
        batched, reason = None, ""
        if not values.get(cfg.ALLOW):
            reason = f"{cfg.ALLOW} is False"
        elif size == 1:
            reason = "the batch size is 1"
        else:
            copy, reason = batched_model(model, size)
            if copy is not None:
                try:
                    batched = services.compile_model(copy, device, self._batched_config(device, forwarded))
                except VinerunError as e:
                    reason = f"compiling the model with batch {size} on {device} failed: {e}"
        if reason:
            log.info("BATCH: model '%s' runs unbatched on %s: %s", model.friendly_name, device, reason)
        return BatchCompiledModel(model, device, size, single, batched, reason, values)

    def compile_implicit(self, model: Model, device: str, config: dict[str, Any]) -> ICompiledModel:
        """The Core's automatic batching (``vinerun.runtime.auto_batching``): ``model`` batched by ``device``'s
        ``OPTIMAL_BATCH_SIZE`` for it; the device's own compiled model when that is 1 or the model does not batch."""
        compiled = self.compile_model(model, {**config, cfg.PRIORITIES: device})
        return compiled if compiled.batched is not None else compiled.single

    def import_model(self, model: Model, config: dict[str, Any]) -> BatchCompiledModel:
        """A blob stores the graph and BATCH's config; the device compiles are redone (through the cache)."""
        return self.compile_model(model, config)
