"""The stream reader of Spark 4.0 and 4.1 (read/legacy_stream_reader.py), driven without Spark.

It is called as pyspark 4.0.5 and 4.1.4 call it (seen in their runs): a new
query asks `latestOffset()` (no arguments) before `initialOffset()`, then
plans `partitions(initial, end)`; a restarted one first hands the
checkpoint's last offset as `partitions(X, X)`; `Trigger.AvailableNow` takes
that one `latestOffset()` for its whole run. The start is resolved once and
recorded in the offsets (`starts`), so the first batch reads from it, also
when it is run again after a crash. Both servers; the Spark runs of this path
are in test_spark_versions.py.
"""

from __future__ import annotations

import pytest
from read_helpers import fill

from jetstream_testing.process import ServerProcess
from spark_jetstream.options import OptionError, ReadOptions
from spark_jetstream.read.legacy_stream_reader import LegacyStreamReader
from spark_jetstream.spark_features import SparkFeatures

pytestmark = pytest.mark.spark_matrix
SPARK_41 = SparkFeatures("4.1.4", read_limits=False, stream_arrow_writer=True, filter_pushdown=True)


def make_reader(url: str, **opts: str) -> LegacyStreamReader:
    spark = (SPARK_41.api_level, SPARK_41.version)
    options = ReadOptions.from_options({"servers": url, "stream": "S", **opts}, streaming=True, spark=spark)
    return LegacyStreamReader(options, spark_version=SPARK_41.version)


def ranges(parts) -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return [(p.stream, p.start, p.end) for p in parts]


async def test_a_new_query_records_its_start_and_reads_from_it(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "S", [("s.a", b"x") for _ in range(4)], subjects=["s.>"])
    r = make_reader(server.url, startingOffsets="latest")
    end = r.latestOffset()
    assert end == {"streams": {"S": 4}, "starts": {"S": 4}}
    await fill(js, "S", [("s.a", b"y") for _ in range(3)])  # 5..7 after the start
    assert r.latestOffset() == {"streams": {"S": 7}, "starts": {"S": 4}}  # resolved once
    initial = r.initialOffset()
    assert initial == {"streams": {}} == r.initialOffset()
    end = r.latestOffset()
    assert ranges(r.partitions(initial, end)) == [("S", 4, 7)]  # batch 0 reads after the start
    await fill(js, "S", [("s.a", b"z")])
    nxt = r.latestOffset()
    assert nxt == {"streams": {"S": 8}, "starts": {"S": 4}}  # the start stays in every offset
    assert ranges(r.partitions(end, nxt)) == [("S", 7, 8)]
    r.stop()


async def test_batch_zero_run_again_after_a_crash_reads_the_same_range(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "S", [("s.a", b"x") for _ in range(5)], subjects=["s.>"])
    first = make_reader(server.url, startingOffsets="latest")
    logged = first.latestOffset()  # what Spark's offset log holds for batch 0
    await fill(js, "S", [("s.a", b"y") for _ in range(5)])
    logged = first.latestOffset()
    assert logged == {"streams": {"S": 10}, "starts": {"S": 5}}
    first.stop()  # killed before batch 0 committed
    await fill(js, "S", [("s.a", b"z") for _ in range(5)])  # `latest` would now be 15
    again = make_reader(server.url, startingOffsets="latest")
    assert again.partitions(logged, logged) == []  # the checkpoint's last offset, handed first
    assert ranges(again.partitions(again.initialOffset(), logged)) == [("S", 5, 10)]
    assert again.latestOffset() == {"streams": {"S": 15}, "starts": {"S": 5}}  # no new resolution
    again.stop()


async def test_available_now_gets_everything_in_its_one_offset(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """Before 4.2, AvailableNow's only `latestOffset()` must not be the empty batch of a start."""
    await fill(js, "S", [("s.a", b"x") for _ in range(6)], subjects=["s.>"])
    r = make_reader(server.url)
    pinned = r.latestOffset()
    assert pinned == {"streams": {"S": 6}, "starts": {"S": 0}}
    assert ranges(r.partitions(r.initialOffset(), pinned)) == [("S", 0, 6)]
    r.stop()


async def test_a_checkpoint_of_the_4_2_path_continues(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """A query started on Spark 4.2+ (its batch 0 recorded the start) run on 4.1 (a downgraded cluster)."""
    await fill(js, "S", [("s.a", b"x") for _ in range(6)], subjects=["s.>"])
    r = make_reader(server.url, startingOffsets="latest")
    assert r.partitions({"streams": {"S": 3}}, {"streams": {"S": 3}}) == []
    assert r.latestOffset() == {"streams": {"S": 6}}
    assert ranges(r.partitions({"streams": {"S": 3}}, {"streams": {"S": 6}})) == [("S", 3, 6)]
    r.stop()


def test_options_that_need_read_limits_are_refused_naming_the_version() -> None:
    spark = (SPARK_41.api_level, SPARK_41.version)
    for name in ("maxMessagesPerTrigger", "maxOffsetsPerTrigger", "maxBytesPerTrigger",
                 "minMessagesPerTrigger", "minOffsetsPerTrigger"):
        with pytest.raises(OptionError, match=rf"option {name} needs Spark 4\.2 or later \(this is Spark 4\.1\.4\)"):
            ReadOptions.from_options({"stream": "S", name: "10"}, streaming=True, spark=spark)
    # batch reads and the other streaming options are the same on every version
    ReadOptions.from_options({"stream": "S", "startingOffsets": "latest", "durable": "d"}, streaming=True, spark=spark)
    ReadOptions.from_options({"stream": "S", "endingOffsets": "5"}, streaming=False, spark=spark)
