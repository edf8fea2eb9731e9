"""Probes for tests that move disk work off the event loop.

`SlowFsync` replaces `os.fsync` (monkeypatch): each call takes `delay_s` longer
and is recorded with its thread's name and what it synced (path, directory or
not), so a test sees where the fsyncs ran and makes an inline one obvious.
`LagMeter` runs a 5 ms ticker on the running loop and keeps the longest the
loop went without running it: how long the loop stalled meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from typing import NamedTuple


class FsyncCall(NamedTuple):
    thread: str
    path: str
    is_dir: bool


class SlowFsync:
    """os.fsync, `delay_s` slower, recording each call (see module docstring)."""

    def __init__(self, delay_s: float, fail: OSError | None = None) -> None:
        self.delay_s = delay_s
        self.fail = fail
        self.calls: list[FsyncCall] = []
        self.real = os.fsync

    def __call__(self, fd: int) -> None:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = "?"
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        self.calls.append(FsyncCall(threading.current_thread().name, path, is_dir))
        time.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        self.real(fd)

    @property
    def threads(self) -> set[str]:
        return {call.thread for call in self.calls}


class LagMeter:
    """The longest the loop went without running a 5 ms ticker, in seconds."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._stop = False
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while not self._stop:
            start = time.monotonic()
            await asyncio.sleep(0.005)
            self.worst = max(self.worst, time.monotonic() - start - 0.005)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> float:
        self._stop = True
        assert self._task is not None
        await self._task
        return self.worst

