"""``vinerun.Dataset``: calibration samples for ``quantize``, as ``nncf.Dataset``.

>>> import numpy as np
>>> ds = Dataset([{"x": np.zeros((1, 3), np.float32)}] * 4, lambda item: item)
>>> len(list(ds.get_inference_data(range(2))))
2
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any


class Dataset:
    """Wraps any iterable of items; ``transform_fn`` turns one item into the model's inputs.

    A model input value is one array (single-input models), a ``{name: array}`` dict, or a list / tuple of
    arrays in the model's input order.
    """

    def __init__(self, data_source: Iterable[Any], transform_fn: Callable[[Any], Any] | None = None):
        self._source = data_source
        self._transform = transform_fn if transform_fn is not None else (lambda item: item)

    def get_data(self, indices: Iterable[int] | None = None) -> Iterator[Any]:
        """The raw items (all, or those at ``indices``, in ascending order)."""
        wanted = None if indices is None else sorted(set(indices))
        pos = 0
        for i, item in enumerate(self._source):
            if wanted is None:
                yield item
                continue
            if pos >= len(wanted):
                return
            if i == wanted[pos]:
                pos += 1
                yield item

    def get_inference_data(self, indices: Iterable[int] | None = None) -> Iterator[Any]:
        """The model inputs made by ``transform_fn`` from the items of ``get_data``."""
        for item in self.get_data(indices):
            yield self._transform(item)

    def get_length(self) -> int | None:
        """The number of items when the source knows it, else None."""
        return len(self._source) if hasattr(self._source, "__len__") else None  # type: ignore[arg-type]

    def get_batch_size(self) -> int | None:
        """Not known for a plain iterable (NNCF's API); always None."""
        return None
