"""The pipeline's JetStream streams (nats-py), publishing the sample (the connector's publisher), stream state.

Streams (all file storage, `duplicate_window` = `DEDUP_WINDOW_S`, long enough
that re-running the job republishes the same sample without adding a message):

| stream          | subjects             | holds                                   |
|-----------------|----------------------|-----------------------------------------|
| ORDERS          | `orders.*`           | the input events                         |
| ORDERS_CLEAN    | `clean.orders.*`     | a cleaned copy of every valid event      |
| ORDERS_DLQ      | `dlq.orders.*`       | bad records with a `Dlq-Reason` header   |
| ORDERS_REVENUE  | `revenue.orders.*`   | revenue and counts per window and region |

`ensure_streams` creates what is missing and leaves existing streams as they
are (a stream with other subjects is an error that names it). `publish`
sends events pipelined through the connector's publisher (message ids in the
headers) and counts what the server stored and what it rejected as a
duplicate.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

import nats
from nats.aio.client import Client as NATS
from nats.js.api import StorageType, StreamConfig

from jobs.orders.generator import OrderEvent

log = logging.getLogger(__name__)

DEDUP_WINDOW_S: Final = 24 * 3600.0
PUBLISH_CHUNK: Final = 512  # events handed to the publisher at once
PUBLISH_WINDOW: Final = 4096  # messages sent and not yet acknowledged
INPUT: Final = "ORDERS"
CLEAN: Final = "ORDERS_CLEAN"
DLQ: Final = "ORDERS_DLQ"
REVENUE: Final = "ORDERS_REVENUE"
STREAMS: Final[dict[str, str]] = {
    INPUT: "orders.*",
    CLEAN: "clean.orders.*",
    DLQ: "dlq.orders.*",
    REVENUE: "revenue.orders.*",
}


class StreamSetupError(RuntimeError):
    """An existing stream does not fit the pipeline (named in the message)."""


@dataclass(frozen=True, slots=True)
class StreamCounts:
    messages: int
    last_seq: int


@dataclass(slots=True)
class PublishStats:
    stored: int = 0
    duplicates: int = 0


async def connect(url: str) -> NATS:
    """`url` is one server URL or a comma-separated list (a cluster's nodes)."""
    servers = [u.strip() for u in url.split(",") if u.strip()]
    return await nats.connect(servers, connect_timeout=10, max_reconnect_attempts=3, reconnect_time_wait=0.5)


async def ensure_streams(url: str, replicas: int = 1) -> None:
    """Create the missing streams with `replicas` replicas (3 on a nats-server cluster)."""
    nc = await connect(url)
    try:
        js = nc.jetstream()
        for name, subject in STREAMS.items():
            try:
                info = await js.stream_info(name)
            except nats.js.errors.NotFoundError:
                await js.add_stream(
                    StreamConfig(
                        name=name,
                        subjects=[subject],
                        storage=StorageType.FILE,
                        duplicate_window=DEDUP_WINDOW_S,
                        num_replicas=replicas,
                    )
                )
                log.info("created stream %s (%s)", name, subject)
                continue
            if subject not in (info.config.subjects or []):
                raise StreamSetupError(
                    f"stream {name} exists with subjects {info.config.subjects}, "
                    f"the pipeline needs {subject!r}: delete it or use another server"
                )
    finally:
        await nc.close()


async def stream_counts(url: str) -> dict[str, StreamCounts]:
    nc = await connect(url)
    try:
        js = nc.jetstream()
        out = {}
        for name in STREAMS:
            info = await js.stream_info(name)
            out[name] = StreamCounts(messages=info.state.messages, last_seq=info.state.last_seq)
        return out
    finally:
        await nc.close()


def publish(
    url: str,
    events: Iterable[OrderEvent],
    *,
    on_progress: Callable[[PublishStats], None] | None = None,
    stop: threading.Event | None = None,
    rate: float | None = None,
    progress_every_s: float = 1.0,
) -> PublishStats:
    """Publish `events` in order; every one acknowledged (stored or duplicate) before returning.

    Through the connector's pipelined publisher (one connection, a window of
    unacknowledged messages, each ack matched to its message; the same path as
    the Spark sink): the sample is setup, not the subject of the demo, and with
    nats-py's `publish_async` the publisher needed twice the CPU per event
    (generating the events included).
    `rate` (events/s) paces the publisher (continuous mode); `stop` ends it early.
    """
    from spark_jetstream.options import ConnectionOptions
    from spark_jetstream.write.publisher import Publisher

    stats = PublishStats()
    # small chunks at a low rate keep the pace even; large ones cost less per message
    chunk = PUBLISH_CHUNK if rate is None else max(1, min(PUBLISH_CHUNK, int(rate / 20)))
    started = last_report = time.monotonic()
    it = iter(events)
    n = 0
    with Publisher(ConnectionOptions.from_options({"servers": url}), max_in_flight=PUBLISH_WINDOW) as publisher:
        # The stop flag is checked before the next events are taken, so every event
        # taken from `events` is published (callers count what they hand out).
        while stop is None or not stop.is_set():
            batch = list(itertools.islice(it, chunk))
            if not batch:
                break
            publisher.publish_many(
                [ev.subject.encode() for ev in batch], [header_block(ev.headers) for ev in batch], [ev.data for ev in batch]
            )
            n += len(batch)
            acked = publisher.stats
            stats.stored, stats.duplicates = acked.published, acked.duplicates
            if rate is not None:
                ahead = n / rate - (time.monotonic() - started)
                if ahead > 0:
                    publisher.flush()  # nothing waits unacknowledged while we pause
                    time.sleep(ahead)
            if on_progress is not None and time.monotonic() - last_report >= progress_every_s:
                last_report = time.monotonic()
                on_progress(stats)
        acked = publisher.flush()  # raises the first publish error
    stats.stored, stats.duplicates = acked.published, acked.duplicates
    return stats


def header_block(headers: dict[str, str]) -> bytes:
    """The NATS header block (`NATS/1.0`, one line per header, a blank line) of `headers`."""
    return ("NATS/1.0\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n").encode()


def run(coro):  # type: ignore[no-untyped-def]
    """Run a coroutine of this module from synchronous job code."""
    return asyncio.run(coro)
