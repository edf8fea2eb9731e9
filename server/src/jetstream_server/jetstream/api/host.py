"""The seam between the JetStream engine and the API handlers.

`ApiHost` is everything a `$JS.API` handler (and the dispatcher) may ask of
the engine; `jetstream_server.jetstream.engine.JetStream` implements it. The
handlers import this protocol, never the engine, so the engine can import the
route table without an import cycle (the engine sits above the API; an
import contract in setup.cfg keeps it so).

What the API reads: the engine's settings, clock and router (answers, audit
advisories, the requesting client), its streams, the consumer host,
`store_limits` (usage, reservations and the account's limits, limits.py),
the request counters and the transfers in progress. What it asks: the
stream lifecycle (create, update, delete, with the checks that need the other
streams) and restores (a staging store, then adopting it as a stream).

Invariants: handlers change streams only through `create_stream_steps`,
`update_stream_steps` and `delete_stream` (which keep the engine's subscriptions
in step); everything they send goes through `router`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from jetstream_server.core.clock import Clock
from jetstream_server.core.router import Router
from jetstream_server.core.steps import Steps
from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.limits import StoreLimits
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.jetstream.snapshot.restore import Staged, Transfer
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store.base import StreamStore


@dataclass(slots=True)
class ApiStats:
    """API requests answered (the dispatcher counts them), and of those, errors."""

    total: int = 0
    errors: int = 0


@dataclass(slots=True)
class ApiQueue:
    """Requests waiting while one works over several loop turns (api/dispatch.py):
    (subject, reply, headers, payload, origin, route table), in arrival order; and the
    stream creates waiting for their fsyncs (api/streams.py)."""

    busy: bool = False
    waiting: deque[tuple[Any, ...]] = field(default_factory=deque)
    # streams whose create waits for its fsyncs -> the identical creates (ApiRequest: a sibling
    # module, not imported) that came meanwhile; per server, dropped with it (no weak map of
    # streams: a compiled class cannot be weakly referenced)
    creating: dict[Stream, list[Any]] = field(default_factory=dict)


class ApiHost(Protocol):
    settings: EngineSettings  # domain, server name, jetstream limits, sync_always, max_pending
    clock: Clock
    router: Router  # what the API sends, and `origin`: the client whose request it handles
    consumer_host: ConsumerHost  # what consumers created by the API deliver through
    store_limits: StoreLimits  # usage, reservations and the account's limits
    api_stats: ApiStats
    api_queue: ApiQueue  # requests waiting behind one that works in turns
    transfers: set[Transfer]  # snapshots and restores in progress (ended when the server stops)

    @property
    def streams(self) -> Mapping[str, Stream]:
        """The account's streams by name (changed only through the methods below)."""
        ...

    def prepare_config(self, config: StreamConfig) -> StreamConfig:
        """A parsed config after the checks that need the other streams (and
        what a mirror inherits from its origin); raises ApiError."""
        ...

    def create_stream_steps(
        self, config: StreamConfig, step: int
    ) -> Steps[tuple[Stream, Callable[[], None] | None]]:
        """Create the stream in steps of `step` subjects (core/steps.py); returns the
        new stream and the fsyncs (a job for the disk thread) to run before its
        create is answered, None when there are none."""
        ...

    def update_stream_steps(self, stream: Stream, config: StreamConfig, step: int) -> Steps[None]:
        """Give `stream` its new config, in steps of `step` subjects."""
        ...

    def delete_stream(self, stream: Stream) -> None: ...

    # -- restores (snapshot/restore.py) ---------------------------------------------
    def stage_restore(self, config: StreamConfig) -> tuple[StreamStore, Path | None]:
        """A private store for a restore's messages, and its staging directory (None
        for memory)."""
        ...

    def adopt_restored(self, staged: Staged) -> dict[str, Any]:
        """Turn a complete restore into a stream; its create answer (ApiError if refused)."""
        ...


def lookup_stream(host: ApiHost, name: str) -> Stream:
    """The stream `name`; ApiError STREAM_NOT_FOUND when there is none."""
    stream = host.streams.get(name)
    if stream is None:
        raise ApiError(Err.STREAM_NOT_FOUND)
    return stream
