"""The real clock: wall time and timers on the asyncio event loop.

The core and JetStream take any `Clock` (`jetstream_server.core.clock`); this is
the one the running server gives them. Timers must be set from the loop's thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

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
