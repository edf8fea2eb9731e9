"""Bounded waits on a condition: how a test waits for something, never a bare sleep.

`until` (in a coroutine) and `until_sync` (in plain code) poll a check, short
steps apart, until it holds; past the bound they fail the test naming what
never happened. The check may be a coroutine function (an API call, a
request to /varz). A loaded 2-core machine only makes them take longer,
never fail, as long as the bound is far above what the condition needs.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

POLL_S = 0.01


async def until(
    check: Callable[[], bool | Awaitable[bool]], timeout_s: float = 30.0, what: str = "the condition"
) -> None:
    """Wait (bounded) for `check()` to hold, letting the loop run."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = check()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        await asyncio.sleep(POLL_S)


def until_sync(check: Callable[[], bool], timeout_s: float = 30.0, what: str = "the condition") -> None:
    """Wait (bounded) for `check()` to hold, outside an event loop."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(POLL_S)
