"""Python's cyclic garbage collector paused while a model is read or compiled.

Reading and compiling make tens of thousands of small objects (nodes, outputs, shapes); every 700 allocations
start a collection, and each full one traverses every live object of the process. Measured on ResNet-50
(`benchmarks/compare.py`): collections took 2-200 ms of a 100-600 ms compile, varying run to run. Reference
counting still frees what it can; cycles made meanwhile wait for the first collection after the outermost
pause ends. Pauses nest and may overlap across threads: the collector is re-enabled (if it was enabled before the
first) when the last one ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector disabled."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
