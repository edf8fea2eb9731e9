"""Streaming reads with spark.readStream.format("jetstream"), against both servers.

Every query uses Trigger.AvailableNow + awaitTermination or
processAllAvailable: no sleeps. Restart on the same checkpoint must continue
exactly (no gap, no repeat).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from read_helpers import fill, stream_reader

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark


class Collector:
    """A foreachBatch sink that keeps (batch_id, rows) in this process (survives restarts)."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, list[tuple]]] = []

    def __call__(self, df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        self.batches.append((batch_id, [tuple(r) for r in df.orderBy("seq").collect()]))


def _run_available_now(df, checkpoint: Path, sink: Collector):  # type: ignore[no-untyped-def]
    query = (
        df.select("subject", "data", "stream", "seq", "timestamp")
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    return query


def _seqs(sink: Collector) -> list[int]:
    return sorted(r[3] for _, rows in sink.batches for r in rows)


def _mem_seqs(spark, table: str) -> list[int]:  # type: ignore[no-untyped-def]
    return [r.seq for r in spark.sql(f"select seq from {table} order by seq").collect()]


def _name() -> str:
    return "t" + uuid.uuid4().hex[:10]


async def test_available_now_then_restart_continues_exactly(
    spark, server: ServerProcess, js, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    await fill(js, "E", [(f"e.{i % 3}", f"m{i}".encode()) for i in range(12)], subjects=["e.>"])
    checkpoint = tmp_path / "ckpt"
    t1 = Collector()
    q = _run_available_now(stream_reader(spark, server.url, "E", subjects="e.0,e.1"), checkpoint, t1)
    assert _seqs(t1) == [s for s in range(1, 13) if (s - 1) % 3 != 2]
    source = q.lastProgress["sources"][0]
    assert json.loads(source["endOffset"]) == {"streams": {"E": 12}}
    assert json.loads(source["latestOffset"]) == {"streams": {"E": 12}}
    await fill(js, "E", [(f"e.{i % 3}", f"n{i}".encode()) for i in range(12, 18)])
    t2 = Collector()
    _run_available_now(stream_reader(spark, server.url, "E", subjects="e.0,e.1"), checkpoint, t2)
    assert _seqs(t2) == [s for s in range(13, 19) if (s - 1) % 3 != 2]
    # a third run with nothing new reads nothing
    t3 = Collector()
    _run_available_now(stream_reader(spark, server.url, "E", subjects="e.0,e.1"), checkpoint, t3)
    assert _seqs(t3) == []


async def test_max_messages_per_trigger_splits_batches(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "M", [("m.x", b"x" * 10) for _ in range(10)], subjects=["m.>"])
    t = Collector()
    _run_available_now(
        stream_reader(spark, server.url, "M", maxMessagesPerTrigger=4), tmp_path / "c", t
    )
    sizes = [len(rows) for _, rows in t.batches if rows]
    assert sizes == [4, 4, 2]
    assert _seqs(t) == list(range(1, 11))


async def test_max_bytes_per_trigger_splits_batches(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "B", [("b.x", b"y" * 100) for _ in range(9)], subjects=["b.>"])
    info = await js.stream_info("B")
    avg = info.state.bytes // info.state.messages
    t = Collector()
    _run_available_now(
        stream_reader(spark, server.url, "B", maxBytesPerTrigger=3 * avg), tmp_path / "c", t
    )
    sizes = [len(rows) for _, rows in t.batches if rows]
    assert sizes == [3, 3, 3]
    assert _seqs(t) == list(range(1, 10))


async def test_starting_offsets_and_timestamp(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "O", [("o.x", b"a") for _ in range(5)], subjects=["o.>"])
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    await fill(js, "O", [("o.x", b"b") for _ in range(3)])
    t = Collector()
    _run_available_now(stream_reader(spark, server.url, "O", startingOffsets=4), tmp_path / "a", t)
    assert _seqs(t) == [4, 5, 6, 7, 8]
    t = Collector()
    _run_available_now(stream_reader(spark, server.url, "O", startingTimestamp=cut), tmp_path / "b", t)
    assert _seqs(t) == [6, 7, 8]
    t = Collector()
    _run_available_now(stream_reader(spark, server.url, "O", startingOffsets="latest"), tmp_path / "c", t)
    assert _seqs(t) == []


async def test_process_all_available_sees_new_messages(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "C", [("c.x", b"1")], subjects=["c.>"])
    t = _name()
    query = (
        stream_reader(spark, server.url, "C", includeHeaders="false")
        .writeStream.format("memory")
        .queryName(t)
        .option("checkpointLocation", str(tmp_path / "c"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        assert _mem_seqs(spark, t) == [1]
        await fill(js, "C", [("c.x", b"2"), ("c.x", b"3")])
        query.processAllAvailable()
        assert _mem_seqs(spark, t) == [1, 2, 3]
        assert spark.table(t).columns == ["subject", "data", "stream", "seq", "timestamp"]
    finally:
        query.stop()


async def test_min_messages_per_trigger_holds_back_small_batches(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Held back until enough messages arrive (the maxTriggerDelay release is tested with a fake clock in test_offsets)."""
    await fill(js, "W", [("w.x", b"1") for _ in range(5)], subjects=["w.>"])
    t = _name()
    query = (
        stream_reader(spark, server.url, "W", minMessagesPerTrigger=5, maxTriggerDelay="1h")
        .writeStream.format("memory")
        .queryName(t)
        .option("checkpointLocation", str(tmp_path / "c"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        assert _mem_seqs(spark, t) == [1, 2, 3, 4, 5]  # 5 >= 5: no wait
        await fill(js, "W", [("w.x", b"2") for _ in range(2)])
        query.processAllAvailable()
        assert _mem_seqs(spark, t) == [1, 2, 3, 4, 5]  # 2 < 5: held back
        await fill(js, "W", [("w.x", b"3") for _ in range(3)])
        query.processAllAvailable()
        assert _mem_seqs(spark, t) == list(range(1, 11))
    finally:
        query.stop()


def _rewrite_offsets_in_old_format(checkpoint: Path) -> int:
    """Rewrite the source offsets of the checkpoint's offset log as the connector wrote them
    before several streams were supported ({"stream": S, "seq": N}); return how many."""
    count = 0
    for path in sorted((checkpoint / "offsets").iterdir()):
        if not path.name.isdigit():
            continue
        lines = path.read_text().split("\n")
        offset = json.loads(lines[2])
        ((stream, seq),) = offset["streams"].items() or (("", 0),)
        if not stream:
            continue
        lines[2] = json.dumps({"stream": stream, "seq": seq})
        path.write_text("\n".join(lines))
        count += 1
    return count


async def test_old_checkpoint_continues_and_gains_a_stream(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "OA", [("oa.x", f"a{i}".encode()) for i in range(5)], subjects=["oa.>"])
    await fill(js, "OB", [("ob.x", f"b{i}".encode()) for i in range(3)], subjects=["ob.>"])
    checkpoint = tmp_path / "c"
    first = Collector()
    _run_available_now(stream_reader(spark, server.url, "OA"), checkpoint, first)
    assert _seqs(first) == [1, 2, 3, 4, 5]
    assert _rewrite_offsets_in_old_format(checkpoint) >= 1
    await fill(js, "OA", [("oa.x", b"a5"), ("oa.x", b"a6")])
    second = Collector()
    q = _run_available_now(stream_reader(spark, server.url, "OA, OB"), checkpoint, second)
    got = sorted((r[2], r[3]) for _, rows in second.batches for r in rows)
    assert got == [("OA", 6), ("OA", 7), ("OB", 1), ("OB", 2), ("OB", 3)]  # no repeat, nothing lost
    assert json.loads(q.lastProgress["sources"][0]["endOffset"]) == {"streams": {"OA": 7, "OB": 3}}
