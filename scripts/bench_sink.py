"""Throughput of the jetstream sink beside nats-py `publish_async`, into the same server.

usage: .venv/bin/python scripts/bench_sink.py [--server nats-server|bundled] [--rows N] [--size B]

Starts a server (file store in a temp dir), then
1. nats-py: `js.publish_async` of N messages (no headers) and `publish_async_completed()`,
   then the same with a `Nats-Msg-Id` header per message (the sink always sends one);
2. the sink: `df.write.format("jetstream")` of N rows (`data` binary of B bytes, one
   subject, derived Nats-Msg-Id per row), timed from `save()` to its return (the
   SparkSession is started and warmed up before);
each into its own fresh stream. Prints msg/s of both and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import nats  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from sink_helpers import create_stream, stream_info  # noqa: E402

import spark_jetstream  # noqa: E402
from server.process import start_server  # noqa: E402
from spark_jetstream.local import local_spark_session  # noqa: E402


async def natspy_publish_async(
    url: str, subject: str, rows: int, payload: bytes, with_ids: bool = False
) -> float:
    nc = await nats.connect(url)
    js = nc.jetstream()
    start = time.perf_counter()
    for i in range(rows):
        headers = {"Nats-Msg-Id": f"bench-{i}"} if with_ids else None
        await js.publish_async(subject, payload, headers=headers)
    await js.publish_async_completed()
    elapsed = time.perf_counter() - start
    await nc.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="nats-server", choices=["nats-server", "bundled"])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args(argv)
    payload = b"x" * args.size
    with tempfile.TemporaryDirectory() as store:
        srv = start_server(args.server, store)
        try:
            create_stream(srv.url, "NATSPY", ["natspy"])
            create_stream(srv.url, "NATSPYID", ["natspyid"])
            create_stream(srv.url, "SINK", ["sink"])
            create_stream(srv.url, "WARM", ["warm"])
            natspy_s = asyncio.run(natspy_publish_async(srv.url, "natspy", args.rows, payload))
            assert stream_info(srv.url, "NATSPY")["state"]["messages"] == args.rows
            natspy_id_s = asyncio.run(
                natspy_publish_async(srv.url, "natspyid", args.rows, payload, with_ids=True)
            )

            spark = local_spark_session("bench-sink", cores=2)
            spark.sparkContext.setLogLevel("ERROR")
            spark_jetstream.register(spark)

            def frame(rows: int):  # type: ignore[no-untyped-def]
                return spark.range(rows, numPartitions=args.partitions).select(
                    F.lit(payload).alias("data")
                )

            frame(1000).write.format("jetstream").mode("append").option("servers", srv.url).option(
                "subject", "warm"
            ).save()
            df = frame(args.rows).cache()
            df.count()
            start = time.perf_counter()
            df.write.format("jetstream").mode("append").option("servers", srv.url).option(
                "subject", "sink"
            ).save()
            sink_s = time.perf_counter() - start
            assert stream_info(srv.url, "SINK")["state"]["messages"] == args.rows
            spark.stop()
        finally:
            srv.stop()
    natspy_rate = args.rows / natspy_s
    sink_rate = args.rows / sink_s
    print(f"server={args.server} rows={args.rows} size={args.size}B")
    print(f"nats-py publish_async: {natspy_rate:10.0f} msg/s ({natspy_s:.2f} s)")
    print(f"nats-py + Nats-Msg-Id: {args.rows / natspy_id_s:10.0f} msg/s ({natspy_id_s:.2f} s)")
    print(f"jetstream sink:        {sink_rate:10.0f} msg/s ({sink_s:.2f} s)")
    print(f"ratio sink / nats-py:  {sink_rate / natspy_rate:10.2f}x")
    print(f"ratio sink / nats-py + Nats-Msg-Id: {sink_rate * natspy_id_s / args.rows:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
