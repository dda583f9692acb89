"""A small text progress bar for command-line tools (no dependency).

It draws on a terminal only, so CI logs stay clean: by default it is enabled when its stream is
a TTY, and ``enabled=True`` forces it on (``vinerun benchmark -progress``).

>>> import io
>>> out = io.StringIO()
>>> bar = ProgressBar(total=10, stream=out, enabled=True, unit="iterations")
>>> bar.update(5); bar.finish()
>>> "100%" in out.getvalue()
True
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """``[=====>    ]  50% 5/10 iterations``, redrawn in place at most ``max_rate`` times a second.

    ``update(done)`` takes the absolute progress (iterations done, or seconds elapsed, shown with
    ``decimals`` digits).
    """

    def __init__(self, total: float, stream: TextIO | None = None, enabled: bool | None = None, width: int = 40,
                 unit: str = "", max_rate: float = 10.0, decimals: int = 0):
        self.total = max(float(total), 1e-9)
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.width = width
        self.unit = unit
        self.decimals = decimals
        self._min_interval = 1.0 / max_rate if max_rate > 0 else 0.0
        self._last_draw = float("-inf")
        self._done = 0.0
        self._finished = False

    def update(self, done: float) -> None:
        """Set the progress to ``done`` (clamped to ``total``); redraws if enough time passed."""
        self._done = min(float(done), self.total)
        if not self.enabled or self._finished:
            return
        now = time.monotonic()
        if now - self._last_draw >= self._min_interval:
            self._last_draw = now
            self._draw()

    def finish(self) -> None:
        """Draw the bar full and end the line (once)."""
        if self._finished:
            return
        self._finished = True
        if self.enabled:
            self._done = self.total
            self._draw()
            self.stream.write("\n")
            self.stream.flush()

    def render(self) -> str:
        """The bar as text, without the carriage return."""
        frac = self._done / self.total
        filled = int(frac * self.width)
        head = ">" if filled < self.width else ""
        bar = "=" * filled + head + " " * (self.width - filled - len(head))
        unit = f" {self.unit}" if self.unit else ""
        d = self.decimals
        return f"[{bar}] {int(frac * 100):3d}% {self._done:.{d}f}/{self.total:.{d}f}{unit}"

    def _draw(self) -> None:
        self.stream.write("\r" + self.render())
        self.stream.flush()
