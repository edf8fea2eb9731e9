"""Write batching: one `transport.write` per connection per batch, not one per message.

While the server handles one read (`reading` is True), connections that got
bytes are collected and flushed right after that read (`flush_dirty`): a
publish that fans out to a hundred subscribers still writes each of them
once. Bytes produced outside a read (timers, services answering later) are
flushed on the next turn of the event loop (`loop.call_soon`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


class Flushable(Protocol):
    def flush(self) -> None:
        """Write everything queued for this connection."""
        ...


class WriteBatcher:
    __slots__ = ("loop", "reading", "_dirty")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        # set once the server runs on its loop (connections only exist after that)
        self.loop = loop
        # True while a connection's read is processed: flushes collect in _dirty
        self.reading = False
        self._dirty: list[Flushable] = []

    def schedule(self, conn: Flushable) -> None:
        """`conn` has bytes to write: after the current read, or on the next turn."""
        if self.reading:
            self._dirty.append(conn)
        else:
            loop = self.loop
            assert loop is not None, "write batcher used before the server started"
            loop.call_soon(conn.flush)

    def waker(self, conn: Flushable) -> Callable[[], None]:
        """`schedule(conn)` as a callable without arguments: what a connection
        hands its session as `output_ready` (one call frame on the hot path)."""

        def wake() -> None:
            if self.reading:
                self._dirty.append(conn)
            else:
                self.schedule(conn)

        return wake

    def flush_dirty(self) -> None:
        dirty = self._dirty
        if dirty:
            self._dirty = []
            for conn in dirty:
                conn.flush()
