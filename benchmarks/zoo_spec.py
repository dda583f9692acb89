"""What every benchmark model is to ``compare.py``: a :class:`ModelSpec` (its own module, so that the zoo's
modules, which ``model_zoo`` gathers, can import it without importing each other)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ModelSpec:
    """A benchmark model: ``build(folder)`` writes (or finds) the ONNX file and returns its path;
    ``inputs()`` gives the same feed to every runtime; ``feedback`` maps an output index to the input
    it is fed back into on the next call (a stateful model, one step per call).

    >>> spec = ModelSpec("tiny", lambda folder: "tiny.onnx", lambda: {"x": np.zeros(1, np.float32)})
    >>> spec.feedback
    {}
    """

    name: str
    build: Callable[[str], str]
    inputs: Callable[[], dict[str, np.ndarray]]
    feedback: dict[int, str] = field(default_factory=dict)
    bf16: bool = True  # whether a bf16 column makes sense for it
    cycle: int = 0  # with feedback: the latency loop restarts from inputs() every `cycle` calls (a growing KV cache)
