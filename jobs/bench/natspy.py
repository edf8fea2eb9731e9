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
"""

from __future__ import annotations

import asyncio
import time

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig

WORKLOADS: tuple[str, ...] = ("sync publish", "publish_async", "pull fetch + ack", "ordered consumer")


class BenchError(RuntimeError):
    """A workload did not see what it should have (lost or extra messages)."""


async def _connect(url: str) -> NATS:
    return await nats.connect(url, connect_timeout=10, max_reconnect_attempts=0)


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


async def sync_publish(url: str, count: int, size: int) -> float:
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        subject = await _fresh_stream(js, "BENCH_SYNC")
        payload = b"x" * size
        start = time.perf_counter()
        for _ in range(count):
            await js.publish(subject, payload)
        elapsed = time.perf_counter() - start
        await _expect_stored(js, "BENCH_SYNC", count)
        return count / elapsed
    finally:
        await nc.close()


async def async_publish(url: str, count: int, size: int) -> float:
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        subject = await _fresh_stream(js, "BENCH_ASYNC")
        payload = b"x" * size
        start = time.perf_counter()
        await _preload(js, subject, count, payload)
        elapsed = time.perf_counter() - start
        await _expect_stored(js, "BENCH_ASYNC", count)
        return count / elapsed
    finally:
        await nc.close()


async def pull_fetch_ack(url: str, count: int, size: int, batch: int = 256) -> float:
    nc = await _connect(url)
    try:
        js = nc.jetstream()
        subject = await _fresh_stream(js, "BENCH_PULL")
        await _preload(js, subject, count, b"x" * size)
        sub = await js.pull_subscribe(subject, durable="bench-pull", stream="BENCH_PULL")
        got = 0
        start = time.perf_counter()
        while got < count:
            msgs = await sub.fetch(min(batch, count - got), timeout=10)
            for msg in msgs:
                await msg.ack()
            got += len(msgs)
        await nc.flush()
        elapsed = time.perf_counter() - start
        info = await js.consumer_info("BENCH_PULL", "bench-pull")
        if got != count or info.num_pending != 0:
            raise BenchError(f"pull fetch: got {got} of {count}, {info.num_pending} still pending")
        return count / elapsed
    finally:
        await nc.close()


async def ordered_consume(url: str, count: int, size: int) -> float:
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

        start = time.perf_counter()
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
            elapsed = time.perf_counter() - start
            await sub.unsubscribe()
        if got != count or last_seq != count:
            raise BenchError(f"ordered consumer: got {got} of {count} (last stream_seq {last_seq})")
        return count / elapsed
    finally:
        await nc.close()


async def _expect_stored(js: JetStreamContext, stream: str, count: int) -> None:
    info = await js.stream_info(stream)
    if info.state.messages != count:
        raise BenchError(f"{stream}: {info.state.messages} messages stored, {count} published")


async def run_all(url: str, counts: dict[str, int], size: int) -> dict[str, float]:
    """msgs/s of each workload in `WORKLOADS` on the server at `url`."""
    return {
        "sync publish": await sync_publish(url, counts["sync publish"], size),
        "publish_async": await async_publish(url, counts["publish_async"], size),
        "pull fetch + ack": await pull_fetch_ack(url, counts["pull fetch + ack"], size),
        "ordered consumer": await ordered_consume(url, counts["ordered consumer"], size),
    }
