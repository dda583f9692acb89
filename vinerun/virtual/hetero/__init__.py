"""HETERO: one model split across devices (see :mod:`.plugin`)."""

from vinerun.virtual.hetero.plugin import HeteroPlugin

__all__ = ["HeteroPlugin"]
