"""A running jetstream -> jetstream query rides out a server outage by itself.

The server (file store) is SIGKILLed and stays down for a few seconds while a
streaming query with a 100 ms trigger runs; then it comes back on the same
port. Every call the query makes meanwhile waits for it within `retryTimeout`
(the driver's offset requests, the executors' range reads, which resume where
they stopped) and the sink reconnects within `ackTimeout`: the query never
fails, and the output holds each input exactly once. (The neighbouring
test_server_restart_query.py allows the query to fail and be restarted; this
one does not.)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from sink_helpers import create_stream, publish_acked, read_stream, stream_info

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark

FIRST, SECOND = 600, 400
OUTAGE_S = 3.0


def start_query(spark: Any, url: str, checkpoint: Path) -> StreamingQuery:
    source = (
        spark.readStream.format("jetstream").option("servers", url).option("stream", "IN")
        .option("maxMessagesPerTrigger", "100").load()
    )
    return (
        source.select("stream", "seq", F.concat(F.lit("x-"), F.col("data").cast("string")).alias("data"))
        .writeStream.format("jetstream").option("servers", url).option("subject", "out.r")
        .option("msgIdMode", "source").option("msgIdScope", "r")
        .option("ackTimeout", "30").option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="100 milliseconds").start()
    )


def out_count(url: str) -> int:
    return int(stream_info(url, "OUT")["state"]["messages"])


@pytest.mark.timeout(600)
def test_a_query_rides_out_a_server_outage(spark: Any, server: ServerProcess, tmp_path: Path) -> None:
    create_stream(server.url, "IN", ["in.>"])
    create_stream(server.url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    publish_acked(server.url, [(f"in.{i % 5}", f"r{i}".encode()) for i in range(FIRST)])
    query = start_query(spark, server.url, tmp_path / "checkpoint")
    try:
        deadline = time.monotonic() + 120
        while out_count(server.url) < 200:
            assert query.isActive and time.monotonic() < deadline, query.exception()
            time.sleep(0.05)  # bounded wait on the query's visible progress
        server.kill()
        time.sleep(OUTAGE_S)  # the query keeps triggering against a dead server
        assert query.isActive, query.exception()
        server.restart()
        publish_acked(server.url, [(f"in.{i % 5}", f"r{i}".encode()) for i in range(FIRST, FIRST + SECOND)])
        deadline = time.monotonic() + 180
        while out_count(server.url) < FIRST + SECOND:
            assert query.isActive, f"the query failed: {query.exception()}"
            assert time.monotonic() < deadline, f"stuck at {out_count(server.url)}"
            time.sleep(0.05)
        query.processAllAvailable()
        assert query.isActive and query.exception() is None
    finally:
        query.stop()
    msgs = read_stream(server.url, "OUT")
    assert sorted(m.msg_id or "" for m in msgs) == sorted(f"r:IN:{s}:0" for s in range(1, FIRST + SECOND + 1))
    assert sorted(m.data for m in msgs) == sorted(f"x-r{i}".encode() for i in range(FIRST + SECOND))
