"""Where a publish to a stream's subjects goes: a fast batch, an atomic batch, or the pipeline.

The engine subscribes every stream's subjects to `Intake.publish` (bound to
the stream with `functools.partial`, one Python frame less per message than a
closure). A reply ending in ``.$FI`` is a fast batch message (fast_batch.py),
a ``Nats-Batch-Id`` header an atomic batch message (atomic_batch.py),
anything else a single publish stored and answered by the publish pipeline
(publish.py). A stream that is closed, or a mirror (it takes messages only
from its origin, it has no subjects of its own), takes nothing.

Invariant: the cheap checks come first (the reply's suffix, a byte search of
the headers) so that a single publish pays for no parsing.
"""

from __future__ import annotations

from jetstream_server.jetstream.atomic_batch import BATCH_ID, AtomicBatches, batch_id_of
from jetstream_server.jetstream.fast_batch import SUFFIX as FAST_BATCH_SUFFIX
from jetstream_server.jetstream.fast_batch import FastBatches
from jetstream_server.jetstream.publish import PublishPipeline
from jetstream_server.jetstream.stream import Stream

_BATCH_ID_MARK = BATCH_ID.encode()


class Intake:
    """Routes what is published to a stream's subjects (see module docstring)."""

    def __init__(
        self, pipeline: PublishPipeline, fast_batches: FastBatches, atomic_batches: AtomicBatches
    ) -> None:
        self._ingest = pipeline.ingest
        self._fast = fast_batches
        self._atomic = atomic_batches

    def publish(
        self, stream: Stream, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        if stream.closed or stream.config.mirror is not None:
            return
        if reply is not None and reply.endswith(FAST_BATCH_SUFFIX):
            self._fast.publish(stream, subject, reply, headers, payload)
        elif headers is not None and _BATCH_ID_MARK in headers and batch_id_of(headers):
            self._atomic.publish(stream, subject, reply, headers, payload)
        else:
            self._ingest(stream, subject, reply, headers, payload)
