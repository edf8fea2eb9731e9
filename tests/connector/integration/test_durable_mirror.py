"""The durable consumer mirrors the committed offset (option `durable`), on both servers.

After each micro-batch Spark commits its end offset and the source moves the
durable's ack floor there (CONSUMER.RESET {"seq": end+1}); the checks read
consumer info through nats-py. A new query without a checkpoint starts at the
durable's ack floor. On a work-queue stream the committed range is removed.
Ownership (a consumer of another application or another filter is refused; two
queries sharing one fail instead of undoing each other; a work-queue purge
never takes what the query did not read) and the best-effort mirror are driven
on the stream reader directly (no Spark: faster, and the steps are explicit).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from api_proxy import ApiProxy
from pyspark.sql.streaming.datasource import ReadAllAvailable
from read_helpers import fill, stream_reader

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.options import ConnectionOptions, ReadOptions
from spark_jetstream.read.durable import OWNER_KEY, DurableOwnershipError, consumer_info
from spark_jetstream.read.stream_reader import JetStreamStreamReader


class FloorRecorder:
    """foreachBatch sink: records each batch's seqs and the durable's ack floor seen during it."""

    def __init__(self, url: str, stream: str, durable: str) -> None:
        self.url, self.stream, self.durable = url, stream, durable
        self.batches: list[tuple[list[int], int | None]] = []

    def __call__(self, df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        seqs = sorted(r.seq for r in df.select("seq").collect())
        with LeanConnection.connect(ConnectionOptions.from_options({"servers": self.url})) as conn:
            info = consumer_info(conn, self.stream, self.durable)
        floor = None if info is None else int(info["ack_floor"]["stream_seq"])
        self.batches.append((seqs, floor))


def _run(df, checkpoint: Path, sink) -> None:  # type: ignore[no-untyped-def]
    q = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()


@pytest.mark.spark
async def test_ack_floor_follows_each_committed_batch(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "D", [("d.a" if i % 2 else "d.b", b"x") for i in range(10)], subjects=["d.>"])
    sink = FloorRecorder(server.url, "D", "spark")
    _run(stream_reader(spark, server.url, "D", durable="spark", maxMessagesPerTrigger=4), tmp_path / "c", sink)
    assert [seqs for seqs, _ in sink.batches if seqs] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]
    # during batch N the floor is the end of batch N-1 (commit happens after the batch)
    assert [floor for seqs, floor in sink.batches if seqs] == [0, 4, 8]
    info = await js.consumer_info("D", "spark")
    assert info.ack_floor.stream_seq == 10
    assert info.num_pending == 0
    await fill(js, "D", [("d.a", b"y") for _ in range(3)])
    info = await js.consumer_info("D", "spark")
    assert info.num_pending == 3  # server-side lag is right


@pytest.mark.spark
async def test_new_query_starts_at_durable_ack_floor(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "F", [("f.a", b"x") for _ in range(6)], subjects=["f.>"])
    sink = FloorRecorder(server.url, "F", "app")
    _run(stream_reader(spark, server.url, "F", durable="app"), tmp_path / "c1", sink)
    assert [s for seqs, _ in sink.batches for s in seqs] == [1, 2, 3, 4, 5, 6]
    await fill(js, "F", [("f.a", b"y") for _ in range(2)])
    # a new checkpoint: the start comes from the durable's ack floor, not startingOffsets
    sink2 = FloorRecorder(server.url, "F", "app")
    _run(stream_reader(spark, server.url, "F", durable="app", startingOffsets="earliest"), tmp_path / "c2", sink2)
    assert [s for seqs, _ in sink2.batches for s in seqs] == [7, 8]


@pytest.mark.spark
async def test_work_queue_stream_drops_committed_messages(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "Q", [("q.a", b"x") for _ in range(5)], subjects=["q.>"], retention="workqueue")
    sink = FloorRecorder(server.url, "Q", "worker")
    _run(stream_reader(spark, server.url, "Q", durable="worker", subjects="q.a"), tmp_path / "c", sink)
    assert [s for seqs, _ in sink.batches for s in seqs] == [1, 2, 3, 4, 5]
    info = await js.stream_info("Q")
    assert info.state.messages == 0
    assert info.state.first_seq == 6


def reader(url: str, stream: str, **opts: str) -> JetStreamStreamReader:
    return JetStreamStreamReader(ReadOptions.from_options({"servers": url, "stream": stream, **opts}, streaming=True))


def start_of(r: JetStreamStreamReader) -> dict:
    return r.latestOffset(r.initialOffset(), ReadAllAvailable())


async def test_foreign_or_differently_filtered_durable_is_refused(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "G", [("g.a", b"1"), ("g.b", b"2"), ("g.a", b"3"), ("g.b", b"4")], subjects=["g.>"])
    await js.add_consumer("G", durable_name="pre", ack_policy="explicit", deliver_policy="all", filter_subject="g.a")
    with pytest.raises(DurableOwnershipError, match="durable consumer 'pre' on stream 'G' was not created by spark-jetstream"):
        start_of(reader(server.url, "G", durable="pre", subjects="g.a"))
    info = await js.consumer_info("G", "pre")
    assert info.ack_floor.stream_seq == 0 and info.num_pending == 2  # untouched
    mine = reader(server.url, "G", durable="mine", subjects="g.a")
    assert start_of(mine)["streams"] == {"G": 0}
    mine.stop()
    with pytest.raises(DurableOwnershipError, match=r"'mine' on stream 'G' filters \['g.a'\] but this query reads \['g.b'\]"):
        start_of(reader(server.url, "G", durable="mine", subjects="g.b"))


async def test_two_queries_sharing_a_durable_do_not_undo_each_other(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "H", [("h.a", b"x") for _ in range(6)], subjects=["h.>"])
    a = reader(server.url, "H", durable="shared")
    a_start = start_of(a)
    a_end = a.latestOffset(a_start, ReadAllAvailable())
    a.commit(a_end)
    assert (await js.consumer_info("H", "shared")).ack_floor.stream_seq == 6
    # a second query with a new checkpoint takes the durable over, starting after its ack floor
    b = reader(server.url, "H", durable="shared")
    b_start = start_of(b)
    assert b_start["streams"] == {"H": 6} and b_start["owner"] != a_end["owner"]
    await fill(js, "H", [("h.a", b"y") for _ in range(2)])
    b.commit(b.latestOffset(b_start, ReadAllAvailable()))
    assert (await js.consumer_info("H", "shared")).ack_floor.stream_seq == 8
    # the first query, still running on its checkpoint, is refused instead of moving it back
    with pytest.raises(DurableOwnershipError, match=r"'shared' on stream 'H' now belongs to another query"):
        a.commit({"streams": {"H": 3}, "owner": a_end["owner"]})
    assert (await js.consumer_info("H", "shared")).ack_floor.stream_seq == 8
    a.stop()
    b.stop()


async def test_checkpoint_before_ownership_adopts_its_durable(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    """A checkpoint written before the marks (old offset format, no owner) keeps its durable."""
    await fill(js, "L", [("l.a", b"x") for _ in range(4)], subjects=["l.>"])
    await js.add_consumer("L", durable_name="old", ack_policy="explicit", deliver_policy="all")
    r = reader(server.url, "L", durable="old")
    end = r.latestOffset({"stream": "L", "seq": 2}, ReadAllAvailable())
    assert end["streams"] == {"L": 4}
    r.commit(end)
    info = await js.consumer_info("L", "old")
    assert info.ack_floor.stream_seq == 4
    assert info.config.metadata[OWNER_KEY] == end["owner"]
    r.stop()


async def test_work_queue_latest_never_purges_what_the_query_did_not_read(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "W", [("w.a", b"old") for _ in range(5)], subjects=["w.>"], retention="workqueue")
    r = reader(server.url, "W", durable="worker", startingOffsets="latest")
    start = start_of(r)
    assert start["streams"] == {"W": 5}
    await fill(js, "W", [("w.a", b"new") for _ in range(3)])
    end = r.latestOffset(start, ReadAllAvailable())
    assert [(p.start, p.end) for p in r.partitions(start, end)] == [(5, 8)]
    r.commit(end)
    state = (await js.stream_info("W")).state
    assert state.first_seq == 1 and state.messages >= 5  # the backlog before the start is still there
    await js.purge_stream("W", seq=6)  # someone deals with the old backlog
    await fill(js, "W", [("w.a", b"next")])
    r.commit(r.latestOffset(end, ReadAllAvailable()))  # now the read range is removed
    state = (await js.stream_info("W")).state
    assert state.messages == 0 and state.first_seq == 10
    r.stop()


async def test_mirror_is_best_effort(server: ServerProcess, js, caplog) -> None:  # type: ignore[no-untyped-def]
    """Defect: a server without CONSUMER.RESET (older than 2.14) failed the query."""
    await fill(js, "M", [("m.a", b"x") for _ in range(3)], subjects=["m.>"])
    with ApiProxy(server.url, "$PX.API", drop=("CONSUMER.RESET",)) as proxy:
        r = reader(server.url, "M", durable="d", apiPrefix="$PX.API", requestTimeout="300ms")
        start = start_of(r)
        end = r.latestOffset(start, ReadAllAvailable())
        with caplog.at_level(logging.WARNING, logger="spark_jetstream.read.durable"):
            r.commit(end)  # no exception: the query goes on
            r.commit({"streams": {"M": 2}, "owner": end["owner"]})  # no answer twice: off until restart
            r.commit({"streams": {"M": 1}, "owner": end["owner"]})  # no third wait
        warnings = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.WARNING]
        assert len(warnings) == 2, warnings
        assert all("durable 'd' on stream 'M'" in w and "nats-server 2.14+" in w for w in warnings)
        assert "mirroring is off until the query restarts" in warnings[1]
        assert sum(1 for subject in proxy.requests if ".CONSUMER.RESET." in subject) == 2
        r.stop()
    assert proxy.error is None
    assert (await js.consumer_info("M", "d")).ack_floor.stream_seq == 0
