"""The real clock: wall time and timers on the asyncio event loop.

The core and JetStream take any `Clock` (`jetstream_server.core.clock`); this is
the one the running server gives them. Timers must be set from the loop's thread.

It also carries the server's disk thread: `run_off_loop(job, done)` runs `job`
on one worker thread (disk jobs run one at a time, in submission order) and
then `done(result or exception)` back on the loop, so fsyncs never stall the
loop (the `Clock` protocol's `run_off_loop`; FakeClock runs jobs inline).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from jetstream_server.app.loop_watchdog import LoopWatchdog
from jetstream_server.core.clock import TimerHandle


class LoopClock:
    """The real clock, with timers on an asyncio event loop.

    `call_later` must be called from the loop's thread.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop | None = None, watchdog: LoopWatchdog | None = None
    ) -> None:
        self._loop = loop
        self._disk: ThreadPoolExecutor | None = None
        self._watchdog = watchdog  # times every timer callback (a slow one is logged)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def now_ns(self) -> int:
        return time.time_ns()

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        if self._watchdog is not None:
            callback = self._watchdog.timer(callback)
        return self.loop.call_later(max(0.0, delay_s), callback)

    def run_off_loop(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """Run `job` on the disk thread, then `done(its result or the exception
        it raised)` on the loop. Call from the loop's thread."""
        if self._disk is None:
            self._disk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jetstream-disk")
        loop = self.loop

        def finished(future: Future[Any]) -> None:
            exc = future.exception()
            result = exc if exc is not None else future.result()
            if not loop.is_closed():
                loop.call_soon_threadsafe(done, result)

        self._disk.submit(job).add_done_callback(finished)

    def shutdown(self) -> None:
        """Wait for disk jobs already submitted and stop the disk thread."""
        if self._disk is not None:
            self._disk.shutdown(wait=True)
            self._disk = None
