"""Scaling with the work: how read throughput, restart time and memory grow with the stream.

`measure(kind, root, rows=..., size=..., spark=..., partitions=(2,))` starts a fresh
server of `kind` (`jobs.bench.servers.running`), fills one file stream with `rows`
messages of `size` bytes, and records, in this order:

- the fill rate: plain publishes pipelined in chunks, each chunk closed by one
  acknowledged publish (its ack follows every earlier message of the connection,
  so at most one chunk is ever unconfirmed and the server's ingest queue stays
  bounded); the stored count is checked at the end;
- the server's RSS after the fill;
- the restart: clean stop, then the time from process start until `STREAM.INFO`
  answers with every message, and the RSS of the restarted server (at rest);
- after an untimed read of the first 1000 messages (`warm_up`; `warm=False` when an
  earlier read of this session already started the Python workers),
  `spark.read.format("jetstream")` of the whole stream into `noop` once per entry of
  `partitions`, with exactly that many Spark partitions (`minPartitions` = p and
  `maxMessagesPerPartition` = rows, so no default of the reader splits further);
  every read checks its row count;
- the server's RSS after the reads (what reading the stream left in its caches).

The store is deleted when the server stops, so a run holds one big stream at a time.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from jobs.bench import connector, natspy
from jobs.bench.servers import restarted, rss_bytes, running

STREAM = "BENCH_SCALE"
SUBJECT = "bench.scale"
READ_TASKS = 2  # the local session's cores: the warm-up starts a Python worker for each
FILL_CHUNK = 5_000  # messages in flight at most while filling (0.6 MB of 128 B messages)


@dataclass(frozen=True, slots=True)
class SizeFigures:
    kind: str
    rows: int
    size: int
    stored_bytes: int
    fill_rate: float  # msgs/s
    rss_after_fill: int
    restart_s: float
    rss_after_restart: int
    read_rates: dict[int, float] = field(default_factory=dict)  # partitions -> rows/s
    rss_after_read: int = 0


async def fill(url: str, rows: int, size: int, chunk: int = FILL_CHUNK) -> float:
    """Create `STREAM` and publish `rows` messages of `size` bytes into it; msgs/s."""
    nc = await natspy._connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=STREAM, subjects=[SUBJECT])
        payload = b"s" * size
        start = time.perf_counter()
        left = rows
        while left > 0:
            n = min(chunk, left)
            for _ in range(n - 1):
                await nc.publish(SUBJECT, payload)
            await js.publish(SUBJECT, payload, timeout=60)
            left -= n
        rate = rows / (time.perf_counter() - start)
        info = await js.stream_info(STREAM)
        if info.state.messages != rows:
            raise natspy.BenchError(f"fill: {info.state.messages} messages stored of {rows} published")
        return rate
    finally:
        await nc.close()


async def _state(url: str) -> tuple[int, int]:
    nc = await natspy._connect(url)
    try:
        info = await nc.jetstream().stream_info(STREAM)
        return int(info.state.messages), int(info.state.bytes)
    finally:
        await nc.close()


def batch_read(spark: SparkSession, url: str, rows: int, partitions: int) -> float:
    """rows/s of a batch read of the whole stream into `noop`, in exactly `partitions` tasks."""
    df = (
        spark.read.format("jetstream")
        .option("servers", url)
        .option("stream", STREAM)
        .option("minPartitions", str(partitions))
        .option("maxMessagesPerPartition", str(max(rows, 1)))
        .load()
    )
    if df.rdd.getNumPartitions() != partitions:
        raise natspy.BenchError(f"batch read planned {df.rdd.getNumPartitions()} partitions, not {partitions}")
    return connector._run_batch(df, rows)


def warm_up(spark: SparkSession, url: str, rows: int) -> None:
    """Read the first messages of the stream (untimed): the executors' Python workers start
    and import the connector before the first timed read, not during it."""
    (
        spark.read.format("jetstream")
        .option("servers", url)
        .option("stream", STREAM)
        .option("startingOffsets", "1")
        .option("endingOffsets", str(min(rows, 1000)))
        .option("minPartitions", str(READ_TASKS))
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )


def measure(
    kind: str,
    root: Path,
    *,
    rows: int,
    size: int,
    spark: Any,
    partitions: Sequence[int] = (2,),
    warm: bool = True,
) -> SizeFigures:
    with running(kind, root, name=f"scale-{rows}") as srv:
        store = srv.store_dir
        try:
            fill_rate = asyncio.run(fill(srv.url, rows, size))
            _, stored = asyncio.run(_state(srv.url))
            rss_fill = rss_bytes(srv)
            srv.stop(timeout=300)
            # a restart reads the store's index: allow for 10M messages on a slow disk
            with restarted(srv, startup_timeout=max(60.0, rows / 20_000)) as again:
                start = time.perf_counter()
                again.start()
                messages, _ = asyncio.run(_state(again.url))
                restart_s = time.perf_counter() - start
                if messages != rows:
                    raise natspy.BenchError(f"{kind}: {messages} messages after restart, {rows} before")
                rss_restart = rss_bytes(again)
                if warm:
                    warm_up(spark, again.url, rows)
                reads = {p: batch_read(spark, again.url, rows, p) for p in partitions}
                return SizeFigures(kind, rows, size, stored, fill_rate, rss_fill, restart_s, rss_restart,
                                   reads, rss_bytes(again))
        finally:
            srv.stop(timeout=300)
            if store is not None:
                shutil.rmtree(store, ignore_errors=True)
