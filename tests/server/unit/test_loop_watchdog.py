"""LoopWatchdog (app/loop_watchdog.py) on a real asyncio loop: a blocked loop shows as
lag, a slow timer or step is logged by name, fast ones are not."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.app.loop_watchdog import LoopWatchdog


def slow_timer_callback() -> None:
    time.sleep(0.12)  # the loop is blocked: what the watchdog must see


def test_lag_and_slow_steps_are_measured(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> LoopWatchdog:
        loop = asyncio.get_running_loop()
        watchdog = LoopWatchdog(interval_s=0.02, warn_s=0.05)
        watchdog.start(loop)
        clock = LoopClock(loop, watchdog=watchdog)
        done = loop.create_future()
        clock.call_later(0.03, slow_timer_callback)
        clock.call_later(0.3, lambda: done.set_result(None))
        watchdog.step(lambda: "a fast step", lambda: None)
        await done
        watchdog.stop()
        return watchdog

    with caplog.at_level(logging.WARNING, logger="jetstream_server.app.loop_watchdog"):
        watchdog = asyncio.run(scenario())
    stats = watchdog.varz()
    assert stats["max_lag_ms"] >= 60, stats  # the 120 ms block delayed a 20 ms tick
    assert stats["slow_steps"] == 1 and "slow_timer_callback" in stats["slowest_step"]
    [record] = caplog.records
    assert record.getMessage().startswith("event loop blocked for ")
    assert "timer slow_timer_callback" in record.getMessage()
