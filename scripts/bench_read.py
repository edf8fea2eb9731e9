"""Read throughput: the `jetstream` source vs a do-nothing Arrow source, both into `noop`.

Usage: .venv/bin/python scripts/bench_read.py [--server nats-server|bundled] [--messages 1000000] [--rounds 2]

Fills a stream with N messages of 128 bytes (lean client, pipelined
publishes with acks, verified by stream state), then runs two AvailableNow streaming
queries into the `noop` sink with the same partitioning (500k sequences per
partition): the do-nothing source yielding pre-built Arrow batches of the same
schema, and `jetstream`, alternating, best of --rounds each. Prints rows/s of
both and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from server.process import start_server
from spark_jetstream import register
from spark_jetstream.arrow_rows import arrow_schema, read_schema
from spark_jetstream.connection import ConnectionOptions
from spark_jetstream.lean_client import LeanConnection
from spark_jetstream.local import local_spark_session
from spark_jetstream.partitions import split_range

PAYLOAD = b"x" * 128


class _Range(InputPartition):
    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi


class NoopArrowReader(DataSourceStreamReader):
    def __init__(self, total: int) -> None:
        self.total = total

    def initialOffset(self) -> dict:
        return {"seq": 0}

    def latestOffset(self, start: dict, limit: object) -> dict:
        return {"seq": self.total}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [_Range(lo, hi) for lo, hi in split_range(start["seq"], end["seq"], max_per_partition=500_000)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Range)
        schema = arrow_schema(True)
        seq = partition.lo
        while seq < partition.hi:
            n = min(32768, partition.hi - seq)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(["bench.x"] * n, pa.string()),
                    pa.array([PAYLOAD] * n, pa.binary()),
                    pa.nulls(n, schema.field("headers").type),
                    pa.array(["BENCH"] * n, pa.string()),
                    pa.array(range(seq + 1, seq + n + 1), pa.int64()),
                    pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
                ],
                schema=schema,
            )
            seq += n


class NoopArrowSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_noop_arrow"

    def schema(self) -> object:
        return read_schema(True)

    def streamReader(self, schema: object) -> DataSourceStreamReader:
        return NoopArrowReader(int(self.options["messages"]))


def fill(url: str, n: int) -> None:
    with LeanConnection.connect(ConnectionOptions.from_options({"servers": url})) as conn:
        conn.js_api("STREAM.CREATE.BENCH", {"name": "BENCH", "subjects": ["bench.>"], "storage": "file"})
        reply = conn.new_reply()  # covered by the connection's inbox subscription
        frame = LeanConnection.pub_frame("bench.x", PAYLOAD, reply=reply)
        rb = reply.encode()
        sent = 0
        while sent < n:
            k = min(5_000, n - sent)
            conn.send(frame * k)  # pipelined: k publishes in flight, then all k acks
            acked = 0
            while acked < k:
                for f in conn.read_frames():
                    if f[0] == b"MSG" and f[1] == rb:
                        if b'"error"' in f[5]:
                            raise SystemExit(f"publish failed: {f[5]!r}")
                        acked += 1
            sent += k
        state = conn.js_api("STREAM.INFO.BENCH")["state"]
        if state["messages"] != n:
            raise SystemExit(f"stream holds {state['messages']} of {n} messages (publishes dropped)")


def timed(spark: object, df: object, name: str) -> float:
    t0 = time.perf_counter()
    q = df.writeStream.format("noop").queryName(name).trigger(availableNow=True).start()  # type: ignore[attr-defined]
    q.awaitTermination()
    if q.exception() is not None:
        raise SystemExit(f"{name} failed: {q.exception()}")
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    return rows / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="nats-server", choices=["nats-server", "bundled"])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    store = tempfile.mkdtemp(prefix="bench-read-")
    srv = start_server(args.server, store)
    try:
        t0 = time.perf_counter()
        fill(srv.url, args.messages)
        print(f"filled {args.messages} x 128 B in {time.perf_counter() - t0:.1f}s ({args.server})")
        spark = local_spark_session("bench-read", cores=2)
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        spark.dataSource.register(NoopArrowSource)
        base = spark.readStream.format("bench_noop_arrow").option("messages", str(args.messages)).load()
        js = (
            spark.readStream.format("jetstream")
            .option("servers", srv.url)
            .option("stream", "BENCH")
            .option("maxMessagesPerPartition", "500000")
            .load()
        )
        # one warm-up of each (worker start-up), then the measured runs
        timed(spark, spark.readStream.format("bench_noop_arrow").option("messages", "1000").load(), "warm")
        # alternate the two, best of `rounds` each: the machine is shared, single runs are noisy
        noop_rate = js_rate = 0.0
        for i in range(args.rounds):
            noop_rate = max(noop_rate, timed(spark, base, f"noop_arrow_{i}"))
            js_rate = max(js_rate, timed(spark, js, f"jetstream_{i}"))
        print(f"do-nothing Arrow source : {noop_rate:>10,.0f} rows/s")
        print(f"jetstream source        : {js_rate:>10,.0f} rows/s")
        print(f"ratio                   : {js_rate / noop_rate:.0%}")
        spark.stop()
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
