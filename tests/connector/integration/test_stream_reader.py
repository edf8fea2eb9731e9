"""The driver side of the stream reader (read/stream_reader.py), without Spark (both servers).

The stream reader is driven directly: initialOffset, latestOffset under each
read limit, AvailableNow pinning, reportLatestOffset, minMessagesPerTrigger
with maxTriggerDelay on an injected clock, and data-loss skipping.
"""

from __future__ import annotations

import pytest
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
)
from read_helpers import fill

from jetstream_testing.process import ServerProcess
from spark_jetstream.options import ReadOptions
from spark_jetstream.read.offsets import DataLossError
from spark_jetstream.read.stream_reader import JetStreamStreamReader


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_reader(url: str, clock: FakeClock | None = None, **opts: str) -> JetStreamStreamReader:
    options = ReadOptions.from_options({"servers": url, "stream": "S", **opts}, streaming=True)
    return JetStreamStreamReader(options, clock=clock or FakeClock())


def off(seq: int) -> dict:
    return {"streams": {"S": seq}}


def resolved_start(reader: JetStreamStreamReader) -> dict:
    """What batch 0 ends at: the start, resolved from the initial offset."""
    initial = reader.initialOffset()
    assert initial == {"streams": {}}
    return reader.latestOffset(initial, ReadAllAvailable())


async def test_initial_offsets(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "S", [("s.a", b"x") for _ in range(6)], subjects=["s.>"])
    await js.purge_stream("S", seq=3)  # first_seq = 3
    assert resolved_start(make_reader(server.url)) == off(2)
    assert resolved_start(make_reader(server.url, startingOffsets="latest")) == off(6)
    assert resolved_start(make_reader(server.url, startingOffsets="5")) == off(4)
    assert resolved_start(make_reader(server.url, startingTimestamp="0")) == off(2)
    far_future = str(4102444800000)  # 2100-01-01
    lenient = make_reader(server.url, startingTimestamp=far_future, startingOffsetsByTimestampStrategy="latest")
    assert resolved_start(lenient) == off(6)
    with pytest.raises(ValueError, match=r"no message of stream 'S' is stored at or after startingTimestamp "
                       r"2100-01-01T00:00:00.000\+00:00; set option startingOffsetsByTimestampStrategy=latest"):
        resolved_start(make_reader(server.url, startingTimestamp=far_future))


async def test_latest_start_is_resolved_once(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """Defect: each initialOffset call asked the server again, so messages published
    between Spark's calls for batch 0 were never read."""
    await fill(js, "S", [("s.a", b"x") for _ in range(3)], subjects=["s.>"])
    r = make_reader(server.url, startingOffsets="latest")
    first = r.initialOffset()
    start = r.latestOffset(first, ReadAllAvailable())
    assert start == off(3)
    await fill(js, "S", [("s.a", b"y") for _ in range(4)])  # 4..7 arrive after the resolution
    assert r.initialOffset() == first  # the same answer on every call
    assert r.latestOffset(first, ReadAllAvailable()) == off(3)  # resolved once
    assert r.partitions(first, start) == []  # batch 0 reads nothing: it records the start
    end = r.latestOffset(start, ReadAllAvailable())
    assert end == off(7)
    assert [(p.start, p.end) for p in r.partitions(start, end)] == [(3, 7)]
    r.stop()


async def test_latest_offset_limits(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "S", [("s.a", b"x" * 40) for _ in range(20)], subjects=["s.>"])
    r = make_reader(server.url, maxMessagesPerTrigger="6")
    assert r.getDefaultReadLimit() == ReadMaxRows(6)
    assert r.latestOffset(off(0), ReadMaxRows(6)) == off(6)
    assert r.latestOffset(off(0), ReadMaxRows(4)) == off(4)  # the engine's limit is tighter
    assert r.latestOffset(off(0), ReadAllAvailable()) == off(20)  # configured limit ignored
    assert r.latestOffset(off(18), ReadMaxRows(6)) == off(20)
    assert r.latestOffset(off(20), ReadMaxRows(6)) == off(20)
    assert r.reportLatestOffset() == off(20)
    info = await js.stream_info("S")
    avg = info.state.bytes // info.state.messages
    rb = make_reader(server.url, maxBytesPerTrigger=str(5 * avg))
    assert rb.getDefaultReadLimit() == ReadMaxBytes(5 * avg)
    assert rb.latestOffset(off(0), ReadMaxBytes(5 * avg)) == off(5)
    assert make_reader(server.url).getDefaultReadLimit() == ReadAllAvailable()


async def test_available_now_pins_the_target(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "S", [("s.a", b"x") for _ in range(5)], subjects=["s.>"])
    r = make_reader(server.url, maxMessagesPerTrigger="2", minMessagesPerTrigger="2", maxTriggerDelay="1h")
    r.prepareForTriggerAvailableNow()
    await fill(js, "S", [("s.a", b"late") for _ in range(5)])
    assert r.latestOffset(off(0), ReadMaxRows(2)) == off(2)
    assert r.latestOffset(off(4), ReadMaxRows(2)) == off(5)  # 1 < minMessages, but AvailableNow must finish
    assert r.latestOffset(off(5), ReadMaxRows(2)) == off(5)  # pinned: later messages wait for the next run


async def test_min_messages_wait_for_max_trigger_delay(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "S", [("s.a", b"x") for _ in range(3)] + [("s.b", b"y") for _ in range(5)], subjects=["s.>"])
    clock = FakeClock()
    r = make_reader(server.url, clock, subjects="s.a", minMessagesPerTrigger="4", maxTriggerDelay="30s")
    assert r.getDefaultReadLimit() == ReadMinRows(4)
    # 8 sequences but only 3 match the filter: held back
    assert r.latestOffset(off(0), ReadMinRows(4)) == off(0)
    clock.now += 29
    assert r.latestOffset(off(0), ReadMinRows(4)) == off(0)
    clock.now += 1
    assert r.latestOffset(off(0), ReadMinRows(4)) == off(8)  # delay passed: release
    await fill(js, "S", [("s.a", b"x") for _ in range(4)])
    assert r.latestOffset(off(8), ReadMinRows(4)) == off(12)  # enough: no wait
    assert r.latestOffset(off(0), ReadAllAvailable()) == off(12)


async def test_data_loss_in_latest_offset_and_partitions(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "S", [("s.a", b"x") for _ in range(10)], subjects=["s.>"])
    await js.purge_stream("S", seq=5)
    strict = make_reader(server.url)
    with pytest.raises(DataLossError, match=r"stream 'S'.*sequences 3\.\.4.*failOnDataLoss=false"):
        strict.latestOffset(off(2), ReadAllAvailable())
    with pytest.raises(DataLossError, match=r"sequences 1\.\.4"):
        strict.partitions(off(0), off(10))
    lenient = make_reader(server.url, failOnDataLoss="false")
    assert lenient.latestOffset(off(2), ReadAllAvailable()) == off(10)
    parts = lenient.partitions(off(2), off(10))
    assert [(p.start, p.end) for p in parts] == [(4, 10)]
    await js.delete_stream("S")
    with pytest.raises(DataLossError, match="stream 'S' not found"):
        strict.latestOffset(off(10), ReadAllAvailable())
    assert lenient.latestOffset(off(10), ReadAllAvailable()) == off(10)
    assert lenient.partitions(off(10), off(12)) == []
    strict.stop()
    lenient.stop()


async def test_new_query_on_missing_stream_names_the_option(server: ServerProcess) -> None:
    with pytest.raises(LookupError, match=r"stream 'S' not found.*\(option stream\)"):
        make_reader(server.url).latestOffset({"streams": {}}, ReadAllAvailable())
    with pytest.raises(LookupError, match=r"stream 'T' not found.*\(option stream\)"):
        make_reader(server.url, stream="T").latestOffset({"streams": {}}, ReadAllAvailable())


async def test_recreated_stream_below_the_committed_offset(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """Defect: a deleted and re-created stream stalled (last sequence below the offset), then skipped."""
    await fill(js, "S", [("s.a", b"x") for _ in range(3)], subjects=["s.>"])
    await js.delete_stream("S")
    await fill(js, "S", [("s.a", b"new") for _ in range(3)], subjects=["s.>"])
    strict = make_reader(server.url)
    with pytest.raises(DataLossError, match=r"stream 'S': its last sequence 3 is below the committed offset 10 "
                       r"\(deleted and re-created\?\).*failOnDataLoss=false"):
        strict.latestOffset(off(10), ReadAllAvailable())
    lenient = make_reader(server.url, failOnDataLoss="false")
    end = lenient.latestOffset(off(10), ReadAllAvailable())
    assert end == off(3)  # the new stream is read from its beginning
    assert [(p.start, p.end) for p in lenient.partitions(off(10), end)] == [(0, 3)]
    strict.stop()
    lenient.stop()


async def test_per_trigger_limits_count_matching_messages(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """Defect: with a subject filter the limits counted stream sequences, not messages read."""
    pattern = ["s.a" if i % 4 == 0 else "s.b" for i in range(40)]  # s.a at 1, 5, 9, ..., 37
    await fill(js, "S", [(subject, b"x" * 40) for subject in pattern], subjects=["s.>"])
    r = make_reader(server.url, subjects="s.a", maxMessagesPerTrigger="3")
    assert r.latestOffset(off(0), ReadMaxRows(3)) == off(9)  # 1, 5, 9
    assert r.latestOffset(off(9), ReadMaxRows(3)) == off(21)  # 13, 17, 21
    assert r.latestOffset(off(33), ReadMaxRows(3)) == off(40)  # only 37 is left
    info = await js.stream_info("S")
    avg = info.state.bytes // info.state.messages
    rb = make_reader(server.url, subjects="s.a", maxBytesPerTrigger=str(2 * avg))
    assert rb.latestOffset(off(0), ReadMaxBytes(2 * avg)) == off(5)  # two messages' worth: 1, 5
    r.prepareForTriggerAvailableNow()
    await fill(js, "S", [("s.a", b"late")])
    assert r.latestOffset(off(33), ReadMaxRows(3)) == off(40)  # pinned: 41 waits for the next run
    r.stop()
    rb.stop()


async def test_several_streams_share_the_limit(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "A", [("a.x", b"x") for _ in range(30)], subjects=["a.>"])
    await fill(js, "B", [("b.x", b"x") for _ in range(10)], subjects=["b.>"])
    r = make_reader(server.url, stream="A,B", maxOffsetsPerTrigger="8")
    start = r.latestOffset(r.initialOffset(), ReadMaxRows(8))
    assert start == {"streams": {"A": 0, "B": 0}}
    assert r.partitions(r.initialOffset(), start) == []
    end = r.latestOffset(start, ReadMaxRows(8))
    assert end == {"streams": {"A": 6, "B": 2}}  # 8 shared by backlog, 30 : 10
    parts = r.partitions(start, end)
    assert [(p.index, p.stream, p.start, p.end) for p in parts] == [(0, "A", 0, 6), (1, "B", 0, 2)]
    assert r.reportLatestOffset() == {"streams": {"A": 30, "B": 10}}
    # a checkpoint of one stream (old format) gains a second stream: its start is resolved, batch reads nothing of it
    r2 = make_reader(server.url, stream="A,B", startingOffsets="latest")
    grown = r2.latestOffset({"stream": "A", "seq": 12}, ReadAllAvailable())
    assert grown == {"streams": {"A": 12, "B": 10}}
    assert r2.partitions({"stream": "A", "seq": 12}, grown) == []
    r.stop()
    r2.stop()


async def test_filtered_limits_on_a_work_queue_stream_count_sequences(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """A work-queue stream allows no ack-none probe consumer: the limits fall back to sequences."""
    await fill(js, "S", [("s.a" if i % 2 else "s.b", b"x") for i in range(10)], subjects=["s.>"], retention="workqueue")
    r = make_reader(server.url, subjects="s.a", maxMessagesPerTrigger="3", minMessagesPerTrigger="2",
                    maxTriggerDelay="1h")
    assert r.latestOffset(off(0), ReadMaxRows(3)) == off(3)
    assert r.latestOffset(off(0), ReadMinRows(2)) == off(3)  # counted 10 >= 2: no wait (max 3 still applies)
    r.stop()


async def test_first_batch_of_an_old_checkpoint_is_read(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """An older version logged batch 0's end ({"stream", "seq"}) but never its start; re-run after
    an upgrade, that batch starts where that version started (here: earliest)."""
    await fill(js, "S", [("s.a", b"x") for _ in range(10)], subjects=["s.>"])
    r = make_reader(server.url)
    parts = r.partitions(r.initialOffset(), {"stream": "S", "seq": 6})
    assert [(p.start, p.end) for p in parts] == [(0, 6)]
    assert r.partitions(r.initialOffset(), off(6)) == []  # this version's batch 0: the recorded start
    r.stop()


async def test_partitions_follow_the_range_size_and_replay_the_same(  # type: ignore[no-untyped-def]
    server: ServerProcess, js, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registered or found by Spark's lookup (pyspark_jetstream), the source splits alike."""
    from pyspark import cloudpickle

    import pyspark_jetstream
    from spark_jetstream.datasource import JetStreamDataSource
    from spark_jetstream.read import partitions

    monkeypatch.setattr(partitions, "AUTO_MIN_MESSAGES", 10)
    await fill(js, "S", [("s.a", b"x") for _ in range(40)], subjects=["s.>"])
    source = cloudpickle.loads(cloudpickle.dumps(pyspark_jetstream.DefaultSource))  # as Spark ships it
    assert source is JetStreamDataSource  # by reference: the executors import the same class

    def plan(lo: int, hi: int, **opts: str) -> list[tuple[int, int]]:
        ds = source(options={"servers": server.url, "stream": "S", **opts})
        return [(p.start, p.end) for p in ds.streamReader(ds.schema()).partitions(off(lo), off(hi))]

    first = plan(0, 40)
    assert first == [(0, 10), (10, 20), (20, 30), (30, 40)]
    assert plan(0, 19) == [(0, 19)]  # under two partitions' worth: one task
    assert plan(0, 40, minPartitions="2") == [(0, 20), (20, 40)]  # given: exactly that
    await fill(js, "S", [("s.a", b"y") for _ in range(25)])
    assert plan(0, 40) == first  # a replay after the stream grew (or a restart) plans the same partitions


async def test_per_stream_starts_as_json(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "A", [("a.x", b"x") for _ in range(10)], subjects=["a.>"])
    await fill(js, "B", [("b.x", b"x") for _ in range(6)], subjects=["b.>"])
    await fill(js, "C", [("c.x", b"x") for _ in range(4)], subjects=["c.>"])
    from sink_helpers import connect

    from spark_jetstream.read.fetch import rfc3339_ns

    with connect(server.url) as conn:  # the stored times of C's messages, in ns
        times = [rfc3339_ns(conn.js_api("STREAM.MSG.GET.C", {"seq": s})["message"]["time"]) for s in range(1, 5)]
    at_ms = times[2] // 1_000_000  # the third message's ms (rounded down: it is at or after it)
    # a read starts after the messages stored before that ms (several may share it on a fast server)
    expected_c = sum(1 for t in times if t < at_ms * 1_000_000)
    r = make_reader(server.url, stream="A,B,C", startingOffsets='{"A": 4, "B": "latest"}',
                    startingOffsetsByTimestamp=f'{{"C": {at_ms}}}')
    start = r.latestOffset(r.initialOffset(), ReadAllAvailable())
    assert start["streams"]["A"] == 3 and start["streams"]["B"] == 6
    assert start["streams"]["C"] == expected_c <= 2
    r.stop()
