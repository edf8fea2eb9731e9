"""One updating progress line on a terminal: done / total, percent, rate and time left.

`ProgressLine(label, total, units=...)` is fed with `update(done)` or `advance(n)` and ended
with `finish()` (or used as a context manager). It is what `stream backup`, `stream restore`,
`pub --count` and `object put|get` show while they work, as natscli shows a progress bar.

Invariants:
- It draws only when its stream (stderr unless given) is a terminal and it is `enabled`: on a
  pipe, a file or a test runner's capture it writes nothing at all, so scripted output stays
  as it was.
- Redraws are throttled by the injected clock: at most one per `min_interval_s` (a tenth of a
  second by default), however often it is fed; the first update draws at once.
- The line is redrawn in place (carriage return, padded over the previous text, cut to the
  terminal's width so it never wraps); `finish()` draws the final state (the average rate and
  the time taken in place of the time left) and ends the line, once; nothing is drawn after.
  `finish(done=total)` ends an estimate at 100%, as natscli marks its backup bar done.
  On an exception inside `with`, the line is ended without the final state, so the error
  starts on a line of its own.
- Rate is the average since the line was created; the time left is what remains of `total`
  at that rate. A total of 0 (unknown) shows only what is done and the rate. Done beyond the
  total (an estimate that was low) shows 100% and no time left.
- One feeder at a time (no lock): `object put|get` feed it from the worker thread nats-py
  reads and writes in, while the event loop thread waits for that work.

Not click's `progressbar` (a dependency already): it redraws on every update (no time
throttle, no clock to inject), shows no rate, and echoes its label on a stream that is not
a terminal.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TextIO

from .units import comma, ibytes

DEFAULT_COLUMNS = 80
BAR_WIDTH = 20


@dataclass(frozen=True, slots=True)
class Units:
    """How amounts print: `amount(n)` and the noun after it (`1,234 msgs`, `1.5 MiB`)."""

    amount: Callable[[int], str]
    noun: str = ""

    def text(self, n: float) -> str:
        return f"{self.amount(int(n))}{self.noun}"


MESSAGES = Units(comma, " msgs")
BYTES = Units(ibytes)


def seconds_text(seconds: float) -> str:
    """A short duration for a progress line: `0.0s`, `4.2s`, `42s`, `3m05s`, `2h07m`."""
    if seconds < 9.95:
        return f"{max(0.0, seconds):.1f}s"
    whole = math.ceil(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed stream, or not a file at all
        return False


def _columns(stream: TextIO) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return DEFAULT_COLUMNS
    return columns if columns > 0 else DEFAULT_COLUMNS  # a fresh pseudo-terminal says 0


class ProgressLine:
    """A progress line for `total` (0: unknown) amounts of `units`, drawn on `stream`."""

    def __init__(self, label: str, total: int, *, units: Units = MESSAGES,
                 stream: TextIO | None = None, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic, min_interval_s: float = 0.1,
                 columns: int | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.label = label
        self.total = max(0, total)
        self.units = units
        self.active = enabled and is_terminal(self._stream)
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._columns = columns if columns else (_columns(self._stream) if self.active else 0)
        self._started = clock()
        self._last_draw: float | None = None
        self._shown = 0  # characters on the line now
        self._finished = False
        self.done = 0

    def advance(self, amount: int = 1) -> None:
        self.update(self.done + amount)

    def update(self, done: int) -> None:
        self.done = done
        if not self.active or self._finished:
            return
        now = self._clock()
        if self._last_draw is not None and now - self._last_draw < self._min_interval_s:
            return
        self._last_draw = now
        self._draw(self.text(now - self._started, final=False))

    def finish(self, done: int | None = None) -> None:
        """The final line (average rate, time taken), then a newline; once. `done` replaces
        the count first: the total of an estimate, once the work is known to be complete."""
        if done is not None:
            self.done = done
        if self.active and not self._finished:
            self._draw(self.text(self._clock() - self._started, final=True))
            self._end()

    def text(self, elapsed_s: float, *, final: bool) -> str:
        """The line for `self.done` after `elapsed_s` seconds."""
        units = self.units
        rate = self.done / elapsed_s if elapsed_s > 0 else 0.0
        rate_text = f"{units.text(rate)}/s" if rate > 0 else f"-{units.noun}/s"
        if not self.total:
            parts = [self.label, units.text(self.done), rate_text]
        else:
            fraction = min(self.done / self.total, 1.0)
            filled = int(fraction * BAR_WIDTH)
            bar = "[" + "#" * filled + "-" * (BAR_WIDTH - filled) + "]"
            done_text = f"{units.amount(self.done)} / {units.text(self.total)}"
            parts = [self.label, bar, done_text, f"{math.floor(fraction * 100):3d}%", rate_text]
            if not final:
                left = self.total - self.done
                if left <= 0:
                    parts.append("ETA 0s")
                elif rate > 0:
                    parts.append(f"ETA {seconds_text(left / rate)}")
                else:
                    parts.append("ETA -")
        if final:
            parts.append(f"in {seconds_text(elapsed_s)}")
        return " ".join(p for p in parts if p)

    def _draw(self, text: str) -> None:
        text = text[: self._columns - 1]
        pad = " " * max(0, self._shown - len(text))
        self._stream.write("\r" + text + pad)
        self._stream.flush()
        self._shown = len(text)

    def _end(self) -> None:
        self._finished = True
        self._stream.write("\n")
        self._stream.flush()

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.finish()
        elif self.active and not self._finished:
            if self._shown:
                self._end()
            self._finished = True
