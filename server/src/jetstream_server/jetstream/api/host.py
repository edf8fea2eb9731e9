"""The seam between the JetStream engine and the API handlers.

`ApiHost` is everything a `$JS.API` handler (and the dispatcher) may ask of
the engine; `jetstream_server.jetstream.engine.JetStream` implements it. The
handlers import this protocol, never the engine, so the engine can import the
route table without an import cycle (the engine sits above the API).

Invariants: handlers change streams only through `create_stream`,
`update_stream` and `delete_stream` (which keep the engine's subscriptions
in step); everything they send goes through `publish` or `respond`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.core.clock import Clock
from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.snapshot.restore import Staged, Transfer
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import ServerLimits, StreamConfig
from jetstream_server.store.base import StreamStore


class ApiHost(Protocol):
    clock: Clock
    domain: str | None
    server_name: str  # the leader stream info names (`cluster`), as a single nats-server
    streams: dict[str, Stream]
    consumer_host: ConsumerHost  # what consumers created by the API deliver through
    api_total: int  # API requests answered (the dispatcher counts them)
    api_errors: int  # ... of which answered with an error
    limits: ServerLimits  # jetstream { limits { ... } }
    account_limits: AccountLimits  # the account's jetstream { max_mem, ... }
    sync_always: bool  # fsync every write (stream stores and consumer state)
    max_pending: int  # the server's max_pending: a direct-get batch sends no more bytes
    transfers: set[Transfer]  # snapshots and restores in progress (ended when the server stops)

    def respond(self, reply: str | None, body: dict[str, Any]) -> None:
        """Publish `body` as JSON to `reply` (nothing when there is no reply)."""
        ...

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        ...

    def reply_backlog(self, subject: str) -> int:
        """Bytes the clients listening on `subject` have not yet been sent (0: none,
        or no client): a long reply waits while its reader is behind."""
        ...

    def has_interest(self, subject: str) -> bool: ...

    def api_origin(self) -> object | None:
        """The client connection whose request is being handled (None: internal)."""
        ...

    def audit(self, subject: str, request: bytes, response: dict[str, Any],
              origin: object | None) -> None:
        """The API audit advisory for an answered request (only when someone listens)."""
        ...

    def lookup_stream(self, name: str) -> Stream:
        """The stream `name`; ApiError STREAM_NOT_FOUND when there is none."""
        ...

    def prepare_config(self, config: StreamConfig) -> StreamConfig:
        """A parsed config after the checks that need the other streams (and
        what a mirror inherits from its origin); raises ApiError."""
        ...

    def create_stream(self, config: StreamConfig) -> Stream: ...

    def update_stream(self, stream: Stream, config: StreamConfig) -> None: ...

    def delete_stream(self, stream: Stream) -> None: ...

    def account_info(self) -> dict[str, Any]:
        """Usage and limits of the account (`$JS.API.INFO` without the `api` block)."""
        ...

    # -- restores (snapshot/restore.py) ---------------------------------------------
    def check_restore_config(self, config: StreamConfig) -> None:
        """The checks a restore passes before any data (account limits); raises ApiError."""
        ...

    def stage_restore(self, config: StreamConfig) -> tuple[StreamStore, Path | None]:
        """A private store for a restore's messages, and its staging directory (None
        for memory)."""
        ...

    def check_restore_room(self, storage: str, size: int) -> None:
        """`size` more bytes must fit the account's and the server's store limits."""
        ...

    def adopt_restored(self, staged: Staged) -> dict[str, Any]:
        """Turn a complete restore into a stream; its create answer (ApiError if refused)."""
        ...
