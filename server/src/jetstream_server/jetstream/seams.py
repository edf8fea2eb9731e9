"""The seam between streams (stream.py) and consumers (the consumer package).

Streams and consumers never import each other; this module pins what each
may ask of the other. Keep these signatures stable.

Stream side, `StreamForConsumers` (implemented by `jetstream_server.jetstream.stream.Stream`):
- `name: str`, `config` (StreamConfig: `.retention` a `Retention`, "limits" |
  "interest" | "workqueue", `.storage` a `Storage`, "file" | "memory",
  `.subjects`, `.max_consumers`, ...),
  `store: StreamStore`, `directory: pathlib.Path | None` (where a file-backed
  stream keeps its files; consumers persist their state under
  `directory / "obs" / <consumer name>`; None for memory streams),
  `consumers: dict[str, StreamListener]`.
- `remove_consumer(name)`; `Stream.add_consumer(name, consumer)` (used by
  the API, which creates consumers) raises ApiError MAXIMUM_CONSUMERS_LIMIT
  when `max_consumers` is reached.
- `acknowledged(seq)`: a consumer reports that `seq` is acknowledged; for
  workqueue retention the stream removes it, for interest retention it
  removes it once no consumer `wants()` it; for limits, nothing happens.

Consumer side, `StreamListener` (implemented by
`jetstream_server.jetstream.consumer.consumer.Consumer`): the stream calls
these synchronously, on the loop thread, after the store has the message
(and after the group-commit fsync when `sync_always`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store.base import StoredMessage, StreamStore


class StreamListener(Protocol):
    name: str

    def on_stored(self, msg: StoredMessage) -> None:
        """A new message is in the stream (deliver to waiting pulls / push)."""
        ...

    def on_purged(self, first_seq: int, removed: Sequence[int] | None = ()) -> None:
        """Everything below `first_seq` was purged or compacted away, and the
        sequences in `removed` (a purge filter's; None: unknown, check): drop
        pending state for messages that are gone; move delivered/ack floor up
        as nats-server does."""
        ...

    def wants(self, seq: int, subject: str) -> bool:
        """Interest retention: True while this consumer still needs `seq`
        (its filter matches `subject` and it has not acknowledged it)."""
        ...

    def on_stream_deleted(self) -> None:
        """The stream is gone: stop, answer waiting pulls with 409 Consumer Deleted."""
        ...

    def stop(self) -> None:
        """Server shutdown: persist state, cancel timers."""
        ...


class StreamForConsumers(Protocol):
    name: str
    config: StreamConfig
    store: StreamStore
    directory: Path | None
    consumers: dict[str, StreamListener]

    def acknowledged(self, seq: int) -> None: ...

    def remove_consumer(
        self, name: str, from_seq: int = 0, filters: tuple[str, ...] | None = None
    ) -> None: ...
