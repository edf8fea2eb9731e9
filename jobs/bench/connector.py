"""Connector workloads: the `jetstream` source and sink on local Spark, against a running server.

- `sink_write`: `df.write.format("jetstream")` of `rows` messages of `size`
  bytes (derived message ids) into a fresh stream; also fills the stream the
  reads use. Returns rows/s.
- `publish_async_rate`: nats-py `publish_async` of the same messages into the
  same server (the baseline of the sink).
- `stream_read`: `readStream.format("jetstream")` of the whole stream into a
  `noop` sink with Trigger.AvailableNow (including query start-up);
  `ceiling_stream_read`: the same with `bench_ceiling` (`jobs.bench.ceiling`).
- `batch_read` / `ceiling_batch_read`: `spark.read` of the same into `noop`.

Every read checks that it saw exactly `rows` rows.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from pyspark.sql import Observation, SparkSession
from pyspark.sql import functions as F

from jobs.bench import natspy
from jobs.bench.ceiling import CeilingDataSource

STREAM = "BENCH_CONNECTOR"
SUBJECT = "bench.connector"
PARTITIONS = 2


def spark_session() -> SparkSession:
    from spark_jetstream import register
    from spark_jetstream.local import local_spark_session

    spark = local_spark_session(
        "spark-jetstream-benchmark", cores=2, conf={"spark.ui.showConsoleProgress": "false"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.dataSource.register(CeilingDataSource)
    return spark


async def _fresh_stream(url: str, name: str, subject: str) -> None:
    nc = await natspy._connect(url)
    try:
        js = nc.jetstream()
        try:
            await js.delete_stream(name)
        except Exception:  # noqa: BLE001 - absent is fine; anything else shows up in add_stream
            pass
        await js.add_stream(name=name, subjects=[subject])
    finally:
        await nc.close()


def sink_write(spark: SparkSession, url: str, rows: int, size: int) -> float:
    asyncio.run(_fresh_stream(url, STREAM, SUBJECT))
    df = spark.range(0, rows, 1, PARTITIONS).select(
        F.lpad(F.col("id").cast("string"), size, "x").cast("binary").alias("data")
    )
    start = time.perf_counter()
    df.write.format("jetstream").option("servers", url).option("subject", SUBJECT).mode("append").save()
    elapsed = time.perf_counter() - start
    stored = asyncio.run(_stored(url, STREAM))
    if stored != rows:
        raise natspy.BenchError(f"sink: {stored} messages stored for {rows} rows")
    return rows / elapsed


async def _stored(url: str, stream: str) -> int:
    nc = await natspy._connect(url)
    try:
        info = await nc.jetstream().stream_info(stream)
        return int(info.state.messages)
    finally:
        await nc.close()


def publish_async_rate(url: str, rows: int, size: int) -> float:
    return asyncio.run(natspy.async_publish(url, rows, size))


def _run_stream(spark: SparkSession, reader: Any, rows: int) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as ckpt:
        start = time.perf_counter()
        q = reader.load().writeStream.format("noop").option("checkpointLocation", ckpt).trigger(availableNow=True).start()
        q.awaitTermination()
        elapsed = time.perf_counter() - start
        seen = sum(int(p["numInputRows"]) for p in q.recentProgress)
    if seen != rows:
        raise natspy.BenchError(f"streaming read: {seen} rows for {rows} messages")
    return rows / elapsed


def stream_read(spark: SparkSession, url: str, rows: int) -> float:
    reader = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", STREAM)
        .option("minPartitions", str(PARTITIONS))
    )
    return _run_stream(spark, reader, rows)


def ceiling_stream_read(spark: SparkSession, rows: int, size: int) -> float:
    reader = (
        spark.readStream.format("bench_ceiling")
        .option("rows", str(rows))
        .option("size", str(size))
        .option("partitions", str(PARTITIONS))
    )
    return _run_stream(spark, reader, rows)


def _run_batch(df: Any, rows: int) -> float:
    seen = Observation("rows")
    start = time.perf_counter()
    df.observe(seen, F.count(F.lit(1)).alias("rows")).write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - start
    if seen.get["rows"] != rows:
        raise natspy.BenchError(f"batch read: {seen.get['rows']} rows for {rows} messages")
    return rows / elapsed


def batch_read(spark: SparkSession, url: str, rows: int) -> float:
    df = (
        spark.read.format("jetstream")
        .option("servers", url)
        .option("stream", STREAM)
        .option("minPartitions", str(PARTITIONS))
        .load()
    )
    return _run_batch(df, rows)


def ceiling_batch_read(spark: SparkSession, rows: int, size: int) -> float:
    df = (
        spark.read.format("bench_ceiling")
        .option("rows", str(rows))
        .option("size", str(size))
        .option("partitions", str(PARTITIONS))
        .load()
    )
    return _run_batch(df, rows)
