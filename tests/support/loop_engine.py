"""The real JetStream engine on the server's `LoopClock` (a real disk thread) and the
in-memory router double: for tests of what runs off the event loop, on a real
store directory. Built inside a running asyncio loop (an async test)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from router_double import RouterDouble
from waits import until

from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings

API = "$JS.API."


class LoopEngine:
    def __init__(self, store_dir: Path, sync_always: bool) -> None:
        self.clock = LoopClock(asyncio.get_running_loop())
        self.router = RouterDouble()
        settings = EngineSettings(store_dir=str(store_dir), sync_always=sync_always)
        self.engine = JetStream(settings, self.clock)
        self.engine.start(self.router)
        self.streams = store_dir / "jetstream" / "$G" / "streams"

    async def ask(self, suffix: str, body: Any) -> tuple[Any, bool]:
        """Send an API request; its answer, and whether it came before the call returned."""
        answers = self.router.request(API + suffix, body)
        at_once = bool(answers)
        await until(lambda: bool(answers))
        return answers[0].json(), at_once

    def close(self) -> None:
        self.engine.close()
        self.clock.shutdown()
