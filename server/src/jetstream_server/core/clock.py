"""Time, injected.

Everything in the server that depends on time (ack wait, redelivery back-off,
pull request expiry, heartbeats, inactive thresholds, message age and TTL,
dedup windows) takes a `Clock`. The asyncio layer supplies `jetstream_server.app.loop_clock.LoopClock`; tests
supply `FakeClock` and call `advance()` instead of sleeping.

Invariants:
- `now_ns()` is wall-clock nanoseconds since the Unix epoch (message
  timestamps, `opt_start_time`, RFC 3339 times in API replies).
- Timers fire in due order; a cancelled timer never fires; a callback may
  schedule further timers (FakeClock runs those too if they fall due within
  the same `advance`).
- `run_off_loop(job, done)` runs `job` away from the loop (LoopClock: on the
  disk thread, one job at a time in submission order) and then calls
  `done(job's result, or the exception it raised)` on the loop; FakeClock runs
  both inline (`run_inline`), before `run_off_loop` returns.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any, Protocol

# `Clock.run_off_loop` as a value: (job, done) -> None
Offload = Callable[[Callable[[], Any], Callable[[Any], None]], None]


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ns(self) -> int:
        """Wall-clock time, nanoseconds since the epoch."""
        ...

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """Run `callback` once, `delay_s` seconds from now."""
        ...

    def run_off_loop(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """Run `job` off the event loop (blocking disk work: fsyncs, block
        rewrites), then `done(its result or the exception it raised)` on the loop."""
        ...


def run_inline(job: Callable[[], Any], done: Callable[[Any], None]) -> None:
    """`run_off_loop` without a disk thread: the job now, then `done` (its result or error)."""
    try:
        result = job()
    except Exception as exc:  # handed to `done`, as the disk thread does
        result = exc
    done(result)


class _FakeTimer:
    __slots__ = ("due_ns", "order", "callback", "cancelled")

    def __init__(self, due_ns: int, order: int, callback: Callable[[], None]) -> None:
        self.due_ns = due_ns
        self.order = order
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: _FakeTimer) -> bool:
        return (self.due_ns, self.order) < (other.due_ns, other.order)


class FakeClock:
    """A clock that moves only when told to; for tests."""

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000) -> None:
        self._now_ns = start_ns
        self._timers: list[_FakeTimer] = []
        self._order = itertools.count()

    def now_ns(self) -> int:
        return self._now_ns

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(self._now_ns + max(0, int(delay_s * 1e9)), next(self._order), callback)
        heapq.heappush(self._timers, timer)
        return timer

    def run_off_loop(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """Inline: tests see the job done and `done` called when this returns."""
        run_inline(job, done)

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer that falls due, in order."""
        target = self._now_ns + int(seconds * 1e9)
        while self._timers and self._timers[0].due_ns <= target:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now_ns = max(self._now_ns, timer.due_ns)
            timer.callback()
        self._now_ns = target

    def turn(self) -> int:
        """One loop turn: run the timers due now that were set before it (not those
        they set, which wait for the next turn); how many ran."""
        due: list[_FakeTimer] = []
        while self._timers and self._timers[0].due_ns <= self._now_ns:
            due.append(heapq.heappop(self._timers))
        ran = 0
        for timer in due:
            if not timer.cancelled:
                timer.callback()
                ran += 1
        return ran

    @property
    def pending_timers(self) -> int:
        return sum(1 for t in self._timers if not t.cancelled)
