"""BATCH: single requests gathered into batched executions on one device (see :mod:`.plugin`)."""

from vinerun.virtual.batch.plugin import BatchPlugin

__all__ = ["BatchPlugin"]
