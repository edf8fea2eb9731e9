"""The durable consumer mirrors the committed offset (option `durable`), on both servers.

After each micro-batch Spark commits its end offset and the source moves the
durable's ack floor there (CONSUMER.RESET {"seq": end+1}); the checks read
consumer info through nats-py. A new query without a checkpoint starts at the
durable's ack floor. On a work-queue stream the committed range is removed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from read_helpers import fill, stream_reader

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.read.durable import consumer_info

pytestmark = pytest.mark.spark


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


async def test_existing_durable_and_filter(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "G", [("g.a", b"1"), ("g.b", b"2"), ("g.a", b"3"), ("g.b", b"4")], subjects=["g.>"])
    await js.add_consumer("G", durable_name="pre", ack_policy="explicit", deliver_policy="all", filter_subject="g.a")
    sink = FloorRecorder(server.url, "G", "pre")
    _run(stream_reader(spark, server.url, "G", durable="pre", subjects="g.a"), tmp_path / "c", sink)
    assert [s for seqs, _ in sink.batches for s in seqs] == [1, 3]
    info = await js.consumer_info("G", "pre")
    assert info.ack_floor.stream_seq == 4
    assert info.num_pending == 0


async def test_work_queue_stream_drops_committed_messages(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "Q", [("q.a", b"x") for _ in range(5)], subjects=["q.>"], retention="workqueue")
    sink = FloorRecorder(server.url, "Q", "worker")
    _run(stream_reader(spark, server.url, "Q", durable="worker", subjects="q.a"), tmp_path / "c", sink)
    assert [s for seqs, _ in sink.batches for s in seqs] == [1, 2, 3, 4, 5]
    info = await js.stream_info("Q")
    assert info.state.messages == 0
    assert info.state.first_seq == 6
