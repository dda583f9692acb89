"""The speech sample's score comparison (specs/gna.md §7): max, avg, RMS and stdev of ``e = ref - out``.

``avg rms error`` follows the C++ sample with batch 1: the RMS of each frame, averaged over frames
(the Python sample's utterance-wide RMS is ``utterance_rms``). ``stdev error`` is
``sqrt(Σe²/N - avg²)`` with ``avg`` the mean of ``|e|``, as the sample computes it.

>>> import numpy as np
>>> s = compare_scores(np.array([[1.0, 2.0]]), np.array([[1.5, 2.0]]))
>>> s.max_error, s.avg_error, s.rms_error
(0.5, 0.25, 0.3535533905932738)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vinerun.errors import InputError


@dataclass
class ErrorStats:
    """Error of scores against a reference, accumulated over frames (and utterances).

    >>> ErrorStats().merge(compare_scores(np.zeros((2, 2)), np.ones((2, 2)))).max_error
    1.0
    """

    frames: int = 0
    count: int = 0
    max_error: float = 0.0
    sum_abs: float = 0.0
    sum_sq: float = 0.0
    sum_frame_rms: float = 0.0

    @property
    def avg_error(self) -> float:
        return self.sum_abs / self.count if self.count else 0.0

    @property
    def rms_error(self) -> float:
        """Per-frame RMS averaged over frames (the C++ sample's ``avg rms error``)."""
        return self.sum_frame_rms / self.frames if self.frames else 0.0

    @property
    def utterance_rms(self) -> float:
        return math.sqrt(self.sum_sq / self.count) if self.count else 0.0

    @property
    def stdev_error(self) -> float:
        if not self.count:
            return 0.0
        return math.sqrt(max(self.sum_sq / self.count - self.avg_error ** 2, 0.0))

    def merge(self, other: ErrorStats) -> ErrorStats:
        """Add ``other``'s frames (for a total over utterances); returns self."""
        self.frames += other.frames
        self.count += other.count
        self.max_error = max(self.max_error, other.max_error)
        self.sum_abs += other.sum_abs
        self.sum_sq += other.sum_sq
        self.sum_frame_rms += other.sum_frame_rms
        return self

    def lines(self) -> list[str]:
        """The sample's four lines."""
        return [f"         max error: {self.max_error:.7f}", f"         avg error: {self.avg_error:.7f}",
                f"     avg rms error: {self.rms_error:.7f}", f"       stdev error: {self.stdev_error:.7f}"]


def compare_scores(reference: np.ndarray, output: np.ndarray) -> ErrorStats:
    """Statistics of ``reference - output`` for one utterance (``[frames, scores]``, same shape)."""
    ref = np.asarray(reference, np.float64)
    out = np.asarray(output, np.float64)
    if ref.shape != out.shape:
        raise InputError(f"reference scores have shape {list(ref.shape)} but the model gave {list(out.shape)}; "
                         "the reference must have one row per frame and one column per score")
    e = (ref - out).reshape(ref.shape[0] if ref.ndim else 1, -1)
    frame_rms = np.sqrt(np.mean(e * e, axis=1)) if e.size else np.zeros(0)
    return ErrorStats(frames=e.shape[0], count=e.size, max_error=float(np.abs(e).max()) if e.size else 0.0,
                      sum_abs=float(np.abs(e).sum()), sum_sq=float((e * e).sum()),
                      sum_frame_rms=float(frame_rms.sum()))
