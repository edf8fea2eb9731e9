"""Lame duck mode: stop taking clients, tell them, then close them spread over time.

nats-server's `lameDuckMode` (SIGUSR2, or ``--signal ldm=<pid>``), step by step:
the client listeners close (no new client can connect), JetStream shuts down
(its store flushed), every connected client that takes asynchronous INFO gets
one with ``"ldm": true`` (clients use it to reconnect elsewhere before they are
cut off), then after `lame_duck_grace_period` the clients are closed one by
one, spread over what is left of `lame_duck_duration` (never more than a second
apart), and the server shuts down. With no client connected it shuts down at
once.

`close_pacing` is the arithmetic, kept apart so it can be checked alone.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from typing import Any, Protocol

from jetstream_server.app.connection import ClientConnection
from jetstream_server.config import ServerConfig

log = logging.getLogger(__name__)


class LameDuckHost(Protocol):
    """What lame duck mode needs of the server (`NatsServer`)."""

    stopped: bool
    lame_duck: bool

    @property
    def config(self) -> ServerConfig: ...

    @property
    def connections(self) -> Mapping[int, ClientConnection]: ...

    def info_for(self, conn: ClientConnection | None) -> dict[str, Any]: ...

    def stop_listening(self) -> None: ...

    def close_services(self) -> None: ...

    async def stop(self) -> None: ...


def close_pacing(clients: int, duration_s: float, grace_s: float) -> tuple[float, int]:
    """(seconds between two closes, clients closed per pause) as nats-server
    computes them: `duration - grace` shared among the clients (a second when
    that is not positive), at most one second apart; when the share would be
    under a nanosecond, clients are closed in batches."""
    spread_ns = int((duration_s - grace_s) * 1e9)
    if spread_ns <= 0:
        spread_ns = 1_000_000_000
    interval_ns = spread_ns // clients if clients else 0
    batch = 1
    if interval_ns < 1:
        interval_ns, batch = 1, max(1, clients // spread_ns)
    interval_ns = min(interval_ns, 1_000_000_000)
    return interval_ns / 1e9, batch


async def enter_lame_duck(server: LameDuckHost, rng: random.Random | None = None) -> None:
    """Run lame duck mode to its end (the server stopped); a no-op when the
    server is already stopping or in lame duck mode."""
    if server.stopped or server.lame_duck:
        return
    log.info("Entering lame duck mode, stop accepting new clients")
    server.lame_duck = True
    server.stop_listening()
    server.close_services()
    clients = list(server.connections.values())
    if not clients:
        await server.stop()
        return
    cfg = server.config
    interval, batch = close_pacing(
        len(clients), cfg.lame_duck_duration_s, cfg.lame_duck_grace_period_s
    )
    for conn in clients:
        conn.session.send_info({**server.info_for(conn), "ldm": True})
    await asyncio.sleep(cfg.lame_duck_grace_period_s)
    if server.stopped:
        return
    log.info("Closing existing clients")
    pick = (rng or random.Random()).uniform
    for i, conn in enumerate(clients):
        conn.close()
        if i == len(clients) - 1:
            break
        if batch == 1 or i % batch == 0:
            await asyncio.sleep(pick(interval / 2, interval))
            if server.stopped:
                return
    await server.stop()
