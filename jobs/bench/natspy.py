"""nats-py workloads: what a plain NATS client sees of a server.

Four workloads, each a coroutine that connects to `url`, runs `count`
messages of `size` bytes and returns messages per second (timed around the
work only, not stream creation or preloading):

- `sync_publish`: `js.publish` one at a time (a request/reply per message);
- `async_publish`: `js.publish_async` with nats-py's pending window, then
  `publish_async_completed()`;
- `pull_fetch_ack`: a durable pull consumer, `fetch(batch)` and `ack()` each;
- `ordered_consume`: an ordered push consumer reading the whole stream.

Each workload uses its own stream (created fresh), so a run on one server
never sees another workload's messages. Every count is checked: a workload
that gets fewer messages than it published raises instead of reporting a rate.

A `Span` brackets the timed part of a workload: wall time and, when given a
reader of the server process's CPU time (`jobs.bench.servers.cpu_seconds`),
the CPU the server spent on it; `run_all` returns one `Timing` per workload, and
`median_timing` folds several runs of one workload into one.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig

WORKLOADS: tuple[str, ...] = ("sync publish", "publish_async", "pull fetch + ack", "ordered consumer")


class BenchError(RuntimeError):
    """A workload did not see what it should have (lost or extra messages)."""


@dataclass(frozen=True, slots=True)
class Timing:
    """The timed part of one workload: `count` messages in `wall_s` seconds, and the
    server process's CPU seconds over the same interval (0.0 when not read)."""

    count: int
    wall_s: float
    server_cpu_s: float

    @property
    def rate(self) -> float:
        return self.count / self.wall_s if self.wall_s > 0 else float("inf")

    @property
    def server_cpu_us_per_msg(self) -> float:
        return self.server_cpu_s * 1e6 / self.count if self.count else 0.0


def median_timing(timings: list[Timing]) -> Timing:
    """One `Timing` of several runs of the same workload (the same `count`): the median wall
    time and, apart, the median server CPU (a run slow on the wall clock need not be the one
    that cost the server most)."""
    if not timings:
        raise ValueError("median_timing of no runs")
    counts = {t.count for t in timings}
    if len(counts) != 1:
        raise ValueError(f"median_timing of runs with different counts: {sorted(counts)}")
    return Timing(
        timings[0].count,
        statistics.median(t.wall_s for t in timings),
        statistics.median(t.server_cpu_s for t in timings),
    )


class Span:
    """Brackets a workload's timed part; `server_cpu` reads the server's CPU seconds."""

    def __init__(self, server_cpu: Callable[[], float] | None = None) -> None:
        self._cpu = server_cpu or (lambda: 0.0)
        self._wall0 = self._cpu0 = 0.0
        self.timing: Timing | None = None

    def begin(self) -> None:
        self._cpu0 = self._cpu()
        self._wall0 = time.perf_counter()

    def end(self, count: int) -> float:
        """Close the span; returns the rate (msgs/s)."""
        wall = time.perf_counter() - self._wall0
        self.timing = Timing(count, wall, max(0.0, self._cpu() - self._cpu0))
        return self.timing.rate


CONNECT_TIMEOUT_S = 30.0


async def _connect(url: str) -> NATS:
    """A connection to `url`, or an error within `CONNECT_TIMEOUT_S` (nats-py retries a
    refused first connect forever with `max_reconnect_attempts=0`; 1 gives up)."""
    try:
        return await asyncio.wait_for(
            nats.connect(url, connect_timeout=10, max_reconnect_attempts=1), CONNECT_TIMEOUT_S
        )
    except (OSError, asyncio.TimeoutError, nats.errors.NoServersError) as exc:
        raise BenchError(f"cannot connect to {url}: {exc!r}") from exc


async def _fresh_stream(js: JetStreamContext, name: str) -> str:
    subject = f"bench.{name.lower()}"
    try:
        await js.delete_stream(name)
    except nats.js.errors.NotFoundError:
        pass
    await js.add_stream(StreamConfig(name=name, subjects=[subject], storage=StorageType.FILE))
    return subject


async def _preload(js: JetStreamContext, subject: str, count: int, payload: bytes) -> None:
    for _ in range(count):
        await js.publish_async(subject, payload)
    await js.publish_async_completed()


async def sync_publish(url: str, count: int, size: int, span: Span | None = None) -> float:
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        subject = await _fresh_stream(js, "BENCH_SYNC")
        payload = b"x" * size
        span = span or Span()
        span.begin()
        for _ in range(count):
            await js.publish(subject, payload)
        rate = span.end(count)
        await _expect_stored(js, "BENCH_SYNC", count)
        return rate
    finally:
        await nc.close()


async def async_publish(url: str, count: int, size: int, span: Span | None = None) -> float:
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        subject = await _fresh_stream(js, "BENCH_ASYNC")
        payload = b"x" * size
        span = span or Span()
        span.begin()
        await _preload(js, subject, count, payload)
        rate = span.end(count)
        await _expect_stored(js, "BENCH_ASYNC", count)
        return rate
    finally:
        await nc.close()


async def pull_fetch_ack(url: str, count: int, size: int, span: Span | None = None, batch: int = 256) -> float:
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        subject = await _fresh_stream(js, "BENCH_PULL")
        await _preload(js, subject, count, b"x" * size)
        sub = await js.pull_subscribe(subject, durable="bench-pull", stream="BENCH_PULL")
        got = 0
        span = span or Span()
        span.begin()
        while got < count:
            msgs = await sub.fetch(min(batch, count - got), timeout=10)
            for msg in msgs:
                await msg.ack()
            got += len(msgs)
        await nc.flush()
        rate = span.end(count)
        info = await js.consumer_info("BENCH_PULL", "bench-pull")
        if got != count or info.num_pending != 0:
            raise BenchError(f"pull fetch: got {got} of {count}, {info.num_pending} still pending")
        return rate
    finally:
        await nc.close()


async def ordered_consume(url: str, count: int, size: int, span: Span | None = None) -> float:
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        subject = await _fresh_stream(js, "BENCH_ORDERED")
        await _preload(js, subject, count, b"x" * size)
        done = asyncio.Event()
        got = 0
        last_seq = 0

        async def on_msg(msg) -> None:  # type: ignore[no-untyped-def]
            nonlocal got, last_seq
            got += 1
            last_seq = msg.metadata.sequence.stream
            if got >= count:
                done.set()

        span = span or Span()
        span.begin()
        sub = await js.subscribe(
            subject,
            cb=on_msg,
            ordered_consumer=True,
            pending_msgs_limit=-1,
            pending_bytes_limit=-1,
        )
        try:
            await asyncio.wait_for(done.wait(), timeout=max(60.0, count / 2000))
        finally:
            rate = span.end(count)
            await sub.unsubscribe()
        if got != count or last_seq != count:
            raise BenchError(f"ordered consumer: got {got} of {count} (last stream_seq {last_seq})")
        return rate
    finally:
        await nc.close()


async def _expect_stored(js: JetStreamContext, stream: str, count: int) -> None:
    info = await js.stream_info(stream)
    if info.state.messages != count:
        raise BenchError(f"{stream}: {info.state.messages} messages stored, {count} published")


async def run_all(
    url: str, counts: dict[str, int], size: int, server_cpu: Callable[[], float] | None = None
) -> dict[str, Timing]:
    """The `Timing` of each workload in `WORKLOADS` on the server at `url` (with the
    server's CPU time over each timed part when `server_cpu` reads it)."""
    workloads = {
        "sync publish": sync_publish,
        "publish_async": async_publish,
        "pull fetch + ack": pull_fetch_ack,
        "ordered consumer": ordered_consume,
    }
    out: dict[str, Timing] = {}
    for name, workload in workloads.items():
        span = Span(server_cpu)
        await workload(url, counts[name], size, span)
        assert span.timing is not None
        out[name] = span.timing
    return out
