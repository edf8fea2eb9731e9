"""File-store workloads: durability cost, restart time and memory of a server with a big stream.

- `publish_rate`: nats-py `publish_async` into a fresh server started with
  `sync_always` on or off (`jobs.bench.servers.running`), msgs/s;
- `fill_restart_memory`: fills one stream with `rows` messages of `size`
  bytes (the `jetstream` sink when a Spark session is given, else nats-py),
  records the server's RSS, restarts it and measures the time from process
  start until the stream answers `STREAM.INFO` with every message, then the
  RSS of the restarted server (what holding the stream costs at rest).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.bench import natspy
from jobs.bench.servers import restarted, rss_bytes, running, server_command

STREAM = "BENCH_STORE"
SUBJECT = "bench.store"


@dataclass(frozen=True, slots=True)
class StoreFigures:
    rows: int
    stored_bytes: int
    fill_rate: float  # msgs/s
    rss_after_fill: int
    restart_s: float
    rss_after_restart: int


def publish_rate(kind: str, root: Path, *, sync_always: bool, count: int, size: int) -> float:
    name = "sync-always" if sync_always else "sync-default"
    with running(kind, root, sync_always=sync_always, name=name) as srv:
        return asyncio.run(natspy.async_publish(srv.url, count, size))


async def _stream_messages(url: str) -> tuple[int, int]:
    nc = await natspy._connect(url)
    try:
        info = await nc.jetstream().stream_info(STREAM)
        return int(info.state.messages), int(info.state.bytes)
    finally:
        await nc.close()


async def _fill_natspy(url: str, rows: int, size: int) -> None:
    nc = await natspy._connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=STREAM, subjects=[SUBJECT])
        await natspy._preload(js, SUBJECT, rows, b"s" * size)
    finally:
        await nc.close()


def _fill_spark(spark: Any, url: str, rows: int, size: int) -> None:
    from pyspark.sql import functions as F

    asyncio.run(_create(url))
    df = spark.range(0, rows, 1, 2).select(F.lpad(F.col("id").cast("string"), size, "s").cast("binary").alias("data"))
    df.write.format("jetstream").option("servers", url).option("subject", SUBJECT).mode("append").save()


async def _create(url: str) -> None:
    nc = await natspy._connect(url)
    try:
        await nc.jetstream().add_stream(name=STREAM, subjects=[SUBJECT])
    finally:
        await nc.close()


def fill_restart_memory(kind: str, root: Path, *, rows: int, size: int, spark: Any = None) -> StoreFigures:
    with running(kind, root, name="restart") as srv:
        start = time.perf_counter()
        if spark is not None:
            _fill_spark(spark, srv.url, rows, size)
        else:
            asyncio.run(_fill_natspy(srv.url, rows, size))
        fill_rate = rows / (time.perf_counter() - start)
        messages, stored = asyncio.run(_stream_messages(srv.url))
        if messages != rows:
            raise natspy.BenchError(f"{kind}: {messages} messages stored for {rows} published")
        rss_fill = rss_bytes(srv)
        srv.stop(timeout=120)
        with restarted(srv) as again:
            start = time.perf_counter()
            again.start()
            messages, _ = asyncio.run(_stream_messages(again.url))
            restart_s = time.perf_counter() - start
            if messages != rows:
                raise natspy.BenchError(f"{kind}: {messages} messages after restart, {rows} before")
            return StoreFigures(rows, stored, fill_rate, rss_fill, restart_s, rss_bytes(again))


__all__ = ["StoreFigures", "fill_restart_memory", "publish_rate", "server_command"]
