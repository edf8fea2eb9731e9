"""Batch reads with spark.read.format("jetstream"), against both servers.

Covers: whole stream, subject filters (several, wildcards), headers
(multi-valued) and includeHeaders=false, starting/ending offsets and
timestamps, partition splitting, data loss both ways, option errors.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from chispa import assert_df_equality
from read_helpers import fill, fill_fast, reader, rows

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.client.frames import encode_headers
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.read.arrow_rows import read_schema

pytestmark = pytest.mark.spark

SUBJECTS = ["orders.eu.new", "orders.us.new", "orders.eu.paid", "audit.log"]


async def _ten(js) -> None:  # type: ignore[no-untyped-def]
    await fill(
        js,
        "ORDERS",
        [(SUBJECTS[i % 4], f"m{i}".encode(), {"Trace": f"t{i}"} if i % 3 == 0 else None) for i in range(10)],
        subjects=["orders.>", "audit.>"],
    )


async def test_reads_whole_stream_with_schema(spark, server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await _ten(js)
    df = reader(spark, server.url, "ORDERS")
    assert df.schema == read_schema(True)
    expected = spark.createDataFrame(
        [
            (SUBJECTS[i % 4], bytearray(f"m{i}".encode()), {"Trace": [f"t{i}"]} if i % 3 == 0 else None, "ORDERS", i + 1)
            for i in range(10)
        ],
        "subject string, data binary, headers map<string,array<string>>, stream string, seq long",
    )
    got = df.drop("timestamp").orderBy("seq")
    assert_df_equality(got, expected, ignore_nullable=True)
    # timestamps are the server's store times, ascending with seq
    ts = [r.timestamp for r in df.orderBy("seq").collect()]
    assert ts == sorted(ts)
    assert abs((ts[0].replace(tzinfo=timezone.utc) - datetime.now(timezone.utc)).total_seconds()) < 120


@pytest.mark.parametrize(
    ("subjects", "expected_seqs"),
    [
        ("orders.eu.new", [1, 5, 9]),
        ("orders.*.new", [1, 2, 5, 6, 9, 10]),
        ("orders.eu.>,audit.log", [1, 3, 4, 5, 7, 8, 9]),
    ],
)
async def test_subject_filters(spark, server: ServerProcess, js, subjects: str, expected_seqs: list[int]) -> None:  # type: ignore[no-untyped-def]
    await _ten(js)
    df = reader(spark, server.url, "ORDERS", subjects=subjects)
    assert [s for (s,) in rows(df, "seq")] == expected_seqs


async def test_multi_valued_headers_and_include_headers_false(spark, server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await js.add_stream(name="H", subjects=["h.>"])
    with LeanConnection.connect(ConnectionOptions.from_options({"servers": server.url})) as conn:
        hdr = encode_headers([("X-Tag", "a"), ("X-Tag", "b"), ("Other", "c")])
        _, ack = conn.request("h.1", b"payload", headers=hdr)
        assert b'"seq":1' in ack.replace(b" ", b"")
    await js.publish("h.2", b"plain")
    df = reader(spark, server.url, "H")
    got = {r.seq: r.headers for r in df.collect()}
    assert got == {1: {"X-Tag": ["a", "b"], "Other": ["c"]}, 2: None}
    no_headers = reader(spark, server.url, "H", includeHeaders="false")
    assert no_headers.columns == ["subject", "data", "stream", "seq", "timestamp"]
    assert rows(no_headers, "seq", "data") == [(1, bytearray(b"payload")), (2, bytearray(b"plain"))]


async def test_starting_and_ending_offsets(spark, server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await _ten(js)
    df = reader(spark, server.url, "ORDERS", startingOffsets=4, endingOffsets=7)
    assert [s for (s,) in rows(df, "seq")] == [4, 5, 6, 7]
    latest = reader(spark, server.url, "ORDERS", startingOffsets="latest")
    assert latest.count() == 0
    beyond = reader(spark, server.url, "ORDERS", startingOffsets=8, endingOffsets=1000)
    assert [s for (s,) in rows(beyond, "seq")] == [8, 9, 10]


async def test_starting_and_ending_timestamps(spark, server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "T", [("t.a", b"early")], subjects=["t.>"])
    time.sleep(0.05)  # the store timestamps must differ by more than clock granularity
    cut1 = int(time.time() * 1000)
    time.sleep(0.05)
    await fill(js, "T", [("t.a", b"middle")])
    time.sleep(0.05)
    cut2 = datetime.now(timezone.utc).isoformat()
    time.sleep(0.05)
    await fill(js, "T", [("t.a", b"late")])
    assert rows(reader(spark, server.url, "T", startingTimestamp=cut1), "data") == [
        (bytearray(b"late"),),
        (bytearray(b"middle"),),
    ]
    assert rows(reader(spark, server.url, "T", startingTimestamp=cut1, endingTimestamp=cut2), "data") == [
        (bytearray(b"middle"),)
    ]
    assert rows(reader(spark, server.url, "T", endingTimestamp=cut1), "data") == [(bytearray(b"early"),)]


async def test_partitions_split_the_range(spark, server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "P", [("p.x", str(i).encode()) for i in range(50)], subjects=["p.>"])
    df = reader(spark, server.url, "P", minPartitions=3)
    assert df.rdd.getNumPartitions() == 3
    assert [s for (s,) in rows(df, "seq")] == list(range(1, 51))
    df = reader(spark, server.url, "P", maxMessagesPerPartition=7)
    assert df.rdd.getNumPartitions() == 8
    assert df.count() == 50


async def test_data_loss_fails_or_skips(spark, server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "L", [("l.x", str(i).encode()) for i in range(10)], subjects=["l.>"])
    await js.purge_stream("L", seq=6)  # removes 1..5
    with pytest.raises(Exception, match=r"stream 'L'.*sequences 1\.\.5.*failOnDataLoss"):
        reader(spark, server.url, "L", startingOffsets=1).collect()
    df = reader(spark, server.url, "L", startingOffsets=1, failOnDataLoss="false")
    assert [s for (s,) in rows(df, "seq")] == [6, 7, 8, 9, 10]
    # earliest is not data loss
    assert reader(spark, server.url, "L").count() == 5


async def test_missing_stream_is_named(spark, server: ServerProcess) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="stream 'NOPE' not found"):
        reader(spark, server.url, "NOPE").collect()


def test_option_errors_name_the_option(spark) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="unknown option 'startingoffset'"):
        spark.read.format("jetstream").option("stream", "S").option("startingOffset", "1").load().collect()
    with pytest.raises(Exception, match="option stream is required"):
        spark.read.format("jetstream").load().collect()
    with pytest.raises(Exception, match="option maxMessagesPerTrigger applies only to streaming"):
        spark.read.format("jetstream").option("stream", "S").option("maxMessagesPerTrigger", "5").load().collect()
    with pytest.raises(Exception, match="option endingOffsets: expected latest"):
        spark.read.format("jetstream").option("stream", "S").option("endingOffsets", "soon").load().collect()
    with pytest.raises(Exception, match="option includeHeaders: expected true or false"):
        spark.read.format("jetstream").option("stream", "S").option("includeHeaders", "maybe").load()


def test_larger_range_two_partitions(spark, server: ServerProcess) -> None:  # type: ignore[no-untyped-def]
    n = 20_000
    fill_fast(server.url, "BIG", "big.x", n)
    df = reader(spark, server.url, "BIG", minPartitions=2, includeHeaders="false")
    assert df.rdd.getNumPartitions() == 2
    stats = df.selectExpr("count(*) as c", "count(distinct seq) as d", "min(seq) as lo", "max(seq) as hi",
                          "sum(length(data)) as bytes").collect()[0]
    assert (stats.c, stats.d, stats.lo, stats.hi, stats.bytes) == (n, n, 1, n, n * 128)


async def test_per_stream_starts_and_ends_as_json(spark, server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "PA", [("pa.x", b"a") for _ in range(10)], subjects=["pa.>"])
    await fill(js, "PB", [("pb.x", b"b") for _ in range(8)], subjects=["pb.>"])
    df = reader(spark, server.url, "PA,PB", startingOffsets='{"PA": 3}', endingOffsets='{"PB": 5}')
    got = sorted((r.stream, r.seq) for r in df.select("stream", "seq").collect())
    assert got == [("PA", s) for s in range(3, 11)] + [("PB", s) for s in range(1, 6)]
    with pytest.raises(Exception, match=r"option startingOffsets names stream 'PC', which option stream does not"):
        reader(spark, server.url, "PA,PB", startingOffsets='{"PC": 3}').collect()
