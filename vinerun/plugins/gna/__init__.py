"""The GNA device: software emulation of Intel's Gaussian & Neural Accelerator (see docs/gna.md)."""

from vinerun.plugins.gna.plugin import GNAPlugin

__all__ = ["GNAPlugin"]
