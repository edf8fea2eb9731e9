"""The Spark side of the `clusters` family: one application on a Spark standalone master.

    python -m jobs.bench.cluster_job --master spark://127.0.0.1:7077 --workers 2 \\
        --rows 200000 --size 128 --target "nats-server=nats://127.0.0.1:4222=1" ...

Run by `jobs.bench.clusters` as a child process (a process holds one SparkContext,
and the benchmark's own may be a local one). Connects to the master with one
executor of one core per worker (`spark.cores.max` = workers), waits until that
many executors registered (else fails naming the master and what registered),
warms up the executors' JVMs and Python workers, then for each `--target`
(`label=servers=replicas`): the sink writing `rows` messages into a fresh stream
with that many replicas, a batch read and a streaming read (AvailableNow) of
them into `noop`. Prints one line `RESULT {json}`: rows/s by target and workload.

Everything is bound to loopback (SPARK_LOCAL_IP, spark.driver.host and
bindAddress) and every Python (driver, its planner workers, executors' workers)
is this interpreter: on a loaded machine a Python worker that starts slowly
gets a longer authentication timeout, and the warm-up is retried once when a
worker failed to connect back (Spark's own 10 s accept on the JVM side cannot
be configured).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence

import nats
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.bench import connector, natspy

PARTITIONS = 2  # of every write and read: both workers busy with 2, the same tasks with 1
WORKLOADS = ("sink, batch write", "batch read -> noop", "streaming read, AvailableNow -> noop")


class ClusterJobError(RuntimeError):
    """The application could not run on the standalone cluster (a clear reason in the message)."""


def session(master: str, workers: int) -> SparkSession:
    from spark_jetstream import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (
        SparkSession.builder.master(master)
        .appName(f"spark-jetstream-bench-{workers}-workers")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(workers))
        .config("spark.executor.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .config("spark.python.authenticate.socketTimeout", "120s")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def executors(spark: SparkSession) -> int:
    """Executors registered with the driver (the driver's own block manager left out)."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1  # type: ignore[union-attr]


def wait_for_executors(spark: SparkSession, master: str, wanted: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (have := executors(spark)) < wanted:
        if time.monotonic() > deadline:
            raise ClusterJobError(
                f"the standalone master {master} gave this application {have} of {wanted} executors "
                f"within {timeout:g}s (too few live workers or cores, or executors that fail to start: "
                "see the workers' logs)"
            )
        time.sleep(0.2)


async def _fresh_stream(servers: str, replicas: int) -> None:
    nc = await nats.connect(servers.split(","), connect_timeout=10, max_reconnect_attempts=3)
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
    nc = await nats.connect(servers.split(","), connect_timeout=10, max_reconnect_attempts=3)
    try:
        return int((await nc.jetstream().stream_info(connector.STREAM)).state.messages)
    finally:
        await nc.close()


def _sink(spark: SparkSession, servers: str, replicas: int, rows: int, size: int) -> float:
    asyncio.run(_fresh_stream(servers, replicas))
    df = spark.range(0, rows, 1, PARTITIONS).select(
        F.lpad(F.col("id").cast("string"), size, "x").cast("binary").alias("data")
    )
    start = time.perf_counter()
    df.write.format("jetstream").option("servers", servers).option("subject", connector.SUBJECT).mode("append").save()
    sink = rows / (time.perf_counter() - start)
    stored = asyncio.run(_stored(servers))
    if stored != rows:
        raise natspy.BenchError(f"sink into {servers}: {stored} messages stored for {rows} rows")
    return sink


def figures(spark: SparkSession, servers: str, replicas: int, rows: int, size: int) -> dict[str, float]:
    return {
        "sink, batch write": _sink(spark, servers, replicas, rows, size),
        "batch read -> noop": connector.batch_read(spark, servers, rows),
        "streaming read, AvailableNow -> noop": connector.stream_read(spark, servers, rows),
    }


def _warm_up(spark: SparkSession, servers: str, replicas: int, size: int) -> None:
    """A small write and batch read: starts the executors' Python workers before anything is
    timed. Retried once when a Python worker failed to connect back (a start-up race under load)."""
    for attempt in (1, 2):
        try:
            _sink(spark, servers, replicas, 1000, size)
            connector.batch_read(spark, servers, 1000)
            return
        except (Py4JJavaError, PySparkException) as exc:
            if attempt == 2 or "connect back" not in str(exc):
                raise
            sys.stderr.write("warm-up: a Python worker failed to connect back; retrying once\n")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.bench.cluster_job", description=__doc__.splitlines()[0])
    p.add_argument("--master", required=True)
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--target", action="append", required=True, help="label=servers=replicas (repeatable)")
    p.add_argument("--executor-timeout", type=float, default=120.0,
                   help="seconds to wait for the executors to register")
    args = p.parse_args(argv)
    targets = []
    for spec in args.target:
        label, servers, replicas = spec.rsplit("=", 2)
        targets.append((label, servers, int(replicas)))
    spark = session(args.master, args.workers)
    try:
        wait_for_executors(spark, args.master, args.workers, args.executor_timeout)
        _warm_up(spark, targets[0][1], targets[0][2], args.size)
        out = {label: figures(spark, servers, replicas, args.rows, args.size) for label, servers, replicas in targets}
        out["executors"] = {"registered": executors(spark)}
    except (ClusterJobError, natspy.BenchError) as exc:
        sys.stderr.write(f"cluster job failed: {exc}\n")
        return 1
    finally:
        spark.stop()
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
