"""The event loop's own latency, measured by the loop: the watchdog behind `/varz`'s
`event_loop` block.

One thread serves every client, so one slow step (a request handler, a timer,
a read from one connection) stalls all of them. Two measurements:

- **lag**: a tick is scheduled every `interval_s`; how late it runs is how
  long the loop was busy with something else (`lag_ms` the latest,
  `max_lag_ms` the largest since start, `recent_max_lag_ms` over the last
  `RECENT_TICKS` ticks). On a crowded machine the operating system may not run
  the server at all for a while, which shows as lag too; `max_cpu_lag_ms`
  counts only the part of a late tick the process spent on the CPU (lag
  bounded by the CPU time used beyond one interval): the loop's own doing;
- **slow steps**: the app layer runs each client read and each timer callback
  through `step(name, fn, ...)`; one that takes longer than `warn_s` logs a
  warning naming it (the connection and the op it started with, or the
  timer's function) and counts in `slow_steps`.

`warn_s` is the config's `loop_lag_warning` (a duration, default 500 ms; 0
turns the warnings off). Overhead per step: two `perf_counter` calls.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S: Final = 0.1
DEFAULT_WARN_S: Final = 0.5
RECENT_TICKS: Final = 100  # ten seconds of ticks


class LoopWatchdog:
    """Measures the loop's lag and times the steps run through `step`."""

    def __init__(
        self, *, interval_s: float = DEFAULT_INTERVAL_S, warn_s: float = DEFAULT_WARN_S
    ) -> None:
        self.interval_s = interval_s
        self.warn_s = warn_s
        self.lag_s = 0.0
        self.max_lag_s = 0.0
        self.recent: deque[float] = deque(maxlen=RECENT_TICKS)
        self.max_cpu_lag_s = 0.0
        self._cpu = 0.0
        self.slow_steps = 0
        self.slowest_step_s = 0.0
        self.slowest_step = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._expected = 0.0

    # -- lag ------------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._cpu = time.process_time()
        self._expected = loop.time() + self.interval_s
        self._handle = loop.call_at(self._expected, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _tick(self) -> None:
        loop = self._loop
        if loop is None:
            return
        now = loop.time()
        lag = max(0.0, now - self._expected)
        self.lag_s = lag
        self.recent.append(lag)
        if lag > self.max_lag_s:
            self.max_lag_s = lag
        cpu = time.process_time()
        cpu_lag = min(lag, max(0.0, cpu - self._cpu - self.interval_s))
        self._cpu = cpu
        if cpu_lag > self.max_cpu_lag_s:
            self.max_cpu_lag_s = cpu_lag
        self._expected = now + self.interval_s
        self._handle = loop.call_at(self._expected, self._tick)

    # -- steps ------------------------------------------------------------------------
    def step(self, name: Callable[[], str], fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)`; if it took longer than `warn_s`, log `name()` (built only then)."""
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            took = time.perf_counter() - start
            if took > self.warn_s > 0:
                self._slow(name(), took)

    def timer(self, callback: Callable[[], None]) -> Callable[[], None]:
        """`callback`, timed as a step named after its function."""

        def timed() -> None:
            self.step(lambda: f"timer {_describe(callback)}", callback)

        return timed

    def _slow(self, what: str, took: float) -> None:
        self.slow_steps += 1
        if took > self.slowest_step_s:
            self.slowest_step_s = took
            self.slowest_step = what
        log.warning("event loop blocked for %.0f ms by %s", took * 1000, what)

    def varz(self) -> dict[str, Any]:
        """The `event_loop` block of `/varz` (milliseconds)."""
        return {
            "lag_ms": round(self.lag_s * 1000, 3),
            "max_lag_ms": round(self.max_lag_s * 1000, 3),
            "recent_max_lag_ms": round(max(self.recent, default=0.0) * 1000, 3),
            "max_cpu_lag_ms": round(self.max_cpu_lag_s * 1000, 3),
            "interval_ms": round(self.interval_s * 1000, 3),
            "slow_steps": self.slow_steps,
            "slowest_step_ms": round(self.slowest_step_s * 1000, 3),
            "slowest_step": self.slowest_step,
            "warning_threshold_ms": round(self.warn_s * 1000, 3),
        }


def _describe(callback: Callable[..., Any]) -> str:
    func = getattr(callback, "func", callback)  # functools.partial
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__qualname__", None) or repr(func)
    if owner is not None and hasattr(owner, "name"):
        return f"{name} ({getattr(owner, 'name', '')})"
    return str(name)
