"""The AUTO and MULTI virtual devices (MULTI = AUTO with CUMULATIVE_THROUGHPUT). See docs/virtual_devices.md."""

from vinerun.virtual.auto.info import execution_device, outputs_from_helper
from vinerun.virtual.auto.plugin import AutoPlugin, MultiPlugin

__all__ = ["AutoPlugin", "MultiPlugin", "execution_device", "outputs_from_helper"]
