"""Scaling figures: the connector on a Spark standalone cluster with 1 and 2 workers, against
one nats-server and a 3-node nats-server cluster (R3 stream), all on this machine.

`run(root, rows, size, say)` starts the nats-server (single) and the 3-node cluster once,
then for 1 and 2 workers (one core each, one executor each, `jetstream_testing.spark_cluster`)
a session on that master, and on each target: the sink writing `rows` messages of `size`
bytes into a fresh stream (replicas 1 or 3), a streaming read (AvailableNow -> noop) and a
batch read of them. Every figure includes its query's start-up, as in `jobs.bench.connector`.
Returns comparisons: 2 workers beside 1, and the cluster beside the single server. On one
machine the workers share its cores, so the figures show the connector's overheads across
executors and replicas, not the throughput of separate hosts.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import nats
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jetstream_testing.cluster import NatsCluster
from jetstream_testing.spark_cluster import SparkStandalone
from jobs.bench import connector, natspy
from jobs.bench.results import Comparison
from jobs.bench.servers import running

WORKERS = (1, 2)


async def _fresh_stream(servers: str, replicas: int) -> None:
    nc = await nats.connect(servers.split(","), connect_timeout=10)
    try:
        js = nc.jetstream()
        try:
            await js.delete_stream(connector.STREAM)
        except nats.js.errors.NotFoundError:
            pass
        await js.add_stream(name=connector.STREAM, subjects=[connector.SUBJECT], num_replicas=replicas)
    finally:
        await nc.close()


async def _stored(servers: str) -> int:
    nc = await nats.connect(servers.split(","), connect_timeout=10)
    try:
        return int((await nc.jetstream().stream_info(connector.STREAM)).state.messages)
    finally:
        await nc.close()


def _session(master: str, workers: int) -> SparkSession:
    from spark_jetstream import register

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run on this machine
    spark = (
        SparkSession.builder.master(master)
        .appName(f"spark-jetstream-scaling-{workers}")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.executor.memory", "1g")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(workers))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def _figures(spark: SparkSession, servers: str, replicas: int, rows: int, size: int) -> dict[str, float]:
    asyncio.run(_fresh_stream(servers, replicas))
    df = spark.range(0, rows, 1, connector.PARTITIONS).select(
        F.lpad(F.col("id").cast("string"), size, "x").cast("binary").alias("data")
    )
    start = time.perf_counter()
    df.write.format("jetstream").option("servers", servers).option("subject", connector.SUBJECT).mode("append").save()
    sink = rows / (time.perf_counter() - start)
    stored = asyncio.run(_stored(servers))
    if stored != rows:
        raise natspy.BenchError(f"sink on {servers}: {stored} messages stored for {rows} rows")
    return {
        "sink, batch write": sink,
        "streaming read, AvailableNow -> noop": connector.stream_read(spark, servers, rows),
        "batch read -> noop": connector.batch_read(spark, servers, rows),
    }


def run(root: Path, rows: int, size: int, say: Callable[[str], None]) -> list[Comparison]:
    figures: dict[tuple[int, str], dict[str, float]] = {}
    with running("nats-server", root, name="scaling") as single, NatsCluster(root / "nats-cluster") as cluster:
        targets = {"nats-server": (single.url, 1), "3-node cluster, R3": (cluster.servers, 3)}
        for workers in WORKERS:
            with SparkStandalone(root / f"spark-{workers}", workers=workers, cores=1, memory="1g") as spark_cluster:
                spark = _session(spark_cluster.master_url, workers)
                try:
                    _figures(spark, single.url, 1, 1000, size)  # warm up the executors' JVMs and Python
                    for label, (servers, replicas) in targets.items():
                        figures[(workers, label)] = got = _figures(spark, servers, replicas, rows, size)
                        say(
                            f"{workers} worker(s), {label}: "
                            + ", ".join(f"{k} {v:,.0f}/s" for k, v in got.items())
                        )
                finally:
                    spark.stop()
    out: list[Comparison] = []
    what = f"{rows:,} x {size} B"
    for label in ("nats-server", "3-node cluster, R3"):
        for workload, two in figures[(2, label)].items():
            out.append(
                Comparison("scaling", f"{workload} ({what}, {label})", "rows/s",
                           "2 workers", two, "1 worker", figures[(1, label)][workload])
            )
    for workers in WORKERS:
        for workload, clustered in figures[(workers, "3-node cluster, R3")].items():
            out.append(
                Comparison("scaling", f"{workload} ({what}, {workers} worker(s))", "rows/s",
                           "3-node R3", clustered, "nats-server", figures[(workers, "nats-server")][workload])
            )
    return out
