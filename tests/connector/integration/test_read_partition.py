"""The executor's read of one partition (read/partitions.py), against both servers.

Data lost after planning: the driver planned (start, end] while the stream held
it; by the time the executor reads, messages were purged, or the stream was
deleted or re-created. With failOnDataLoss=true the task fails naming the
stream and the range; with false it logs and reads what is left.
"""

from __future__ import annotations

import pytest
from read_helpers import fill

from jetstream_testing.process import ServerProcess
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.read.offsets import DataLossError
from spark_jetstream.read.partitions import SeqRangePartition, read_partition


def seqs(url: str, part: SeqRangePartition) -> list[int]:
    conn = ConnectionOptions.from_options({"servers": url})
    return [s for batch in read_partition(conn, part, False) for s in batch.column("seq").to_pylist()]


async def test_purged_after_planning(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "P", [("p.a", b"x") for _ in range(10)], subjects=["p.>"])
    strict = SeqRangePartition(0, "P", 2, 8, ("p.a",), fail_on_data_loss=True)
    lenient = SeqRangePartition(0, "P", 2, 8, ("p.a",), fail_on_data_loss=False)
    assert seqs(server.url, strict) == [3, 4, 5, 6, 7, 8]
    await js.purge_stream("P", seq=6)  # 3, 4, 5 gone after planning
    with pytest.raises(DataLossError, match=r"stream 'P'.*sequences 3\.\.5.*after planning.*failOnDataLoss=false"):
        seqs(server.url, strict)
    assert seqs(server.url, lenient) == [6, 7, 8]


async def test_stream_deleted_or_recreated_after_planning(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "R", [("r.a", b"x") for _ in range(10)], subjects=["r.>"])
    strict = SeqRangePartition(0, "R", 4, 10, fail_on_data_loss=True)
    lenient = SeqRangePartition(0, "R", 4, 10, fail_on_data_loss=False)
    await js.delete_stream("R")
    with pytest.raises(DataLossError, match=r"stream 'R'.*sequences 5\.\.10.*stream not found"):
        seqs(server.url, strict)
    assert seqs(server.url, lenient) == []
    await fill(js, "R", [("r.a", b"new") for _ in range(6)], subjects=["r.>"])  # 1..6: not the planned 5..10
    with pytest.raises(DataLossError, match=r"sequences 5\.\.10.*last sequence is 6 \(deleted and re-created\?\)"):
        seqs(server.url, strict)
    assert seqs(server.url, lenient) == []
