"""A server restart in the middle of a running jetstream -> jetstream query.

The server (file store) is killed and started again on the same port while the
query runs. The query either recovers by itself (the sink reconnects and
re-sends its unacked window) or fails with a clear error and succeeds when
restarted on its checkpoint; either way the output holds each input once.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from sink_helpers import create_stream, publish_acked, read_stream, stream_info

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark

FIRST, SECOND = 600, 400


def publish_inputs(url: str, start: int, count: int) -> None:
    publish_acked(url, [(f"in.{i % 5}", f"r{i}".encode()) for i in range(start, start + count)])


def out_count(url: str) -> int:
    return int(stream_info(url, "OUT")["state"]["messages"])


def start_query(spark: SparkSession, url: str, checkpoint: Path) -> StreamingQuery:
    source = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", "IN")
        .option("maxMessagesPerTrigger", "100")
        .load()
    )
    return (
        source.select("stream", "seq", F.concat(F.lit("x-"), F.col("data").cast("string")).alias("data"))
        .writeStream.format("jetstream")
        .option("servers", url)
        .option("subject", "out.r")
        .option("msgIdMode", "source").option("msgIdScope", "r")
        .option("ackTimeout", "20")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="100 milliseconds")
        .start()
    )


@pytest.mark.timeout(600)
def test_server_restart_mid_query_loses_and_duplicates_nothing(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    create_stream(server.url, "IN", ["in.>"])
    create_stream(server.url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    publish_inputs(server.url, 0, FIRST)
    checkpoint = tmp_path / "checkpoint"
    query = start_query(spark, server.url, checkpoint)
    failures: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while out_count(server.url) < 200:
            assert query.isActive and time.monotonic() < deadline, query.exception()
            time.sleep(0.05)  # bounded wait on the query's visible progress
        server.kill()
        server.restart()
        publish_inputs(server.url, FIRST, SECOND)
        deadline = time.monotonic() + 180
        while True:
            if not query.isActive:
                exc = query.exception()
                assert exc is not None
                failures.append(str(exc))
                assert len(failures) <= 3, failures
                query = start_query(spark, server.url, checkpoint)
            if out_count(server.url) >= FIRST + SECOND:
                query.processAllAvailable()
                break
            assert time.monotonic() < deadline, f"stuck at {out_count(server.url)}; failures: {failures}"
            time.sleep(0.05)
    finally:
        query.stop()
    logging.getLogger(__name__).info("query failures during the restart: %s", failures)
    for text in failures:  # a failure must say what went wrong
        assert any(word in text.lower() for word in ("connection", "server", "closed", "refused")), text
    msgs = read_stream(server.url, "OUT")
    assert sorted(m.msg_id or "" for m in msgs) == sorted(f"r:IN:{s}:0" for s in range(1, FIRST + SECOND + 1))
    assert sorted(m.data for m in msgs) == sorted(f"x-r{i}".encode() for i in range(FIRST + SECOND))
