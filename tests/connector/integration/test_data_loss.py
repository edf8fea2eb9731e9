"""Data loss in streaming reads: failOnDataLoss=true fails naming stream, range and
option; false skips ahead (and logs). Both servers.

Loss is provoked for real: purge messages a checkpointed query has not read
yet, or delete the stream.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from read_helpers import fill, stream_reader

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark


class Seqs:
    def __init__(self) -> None:
        self.seqs: list[int] = []

    def __call__(self, df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        self.seqs.extend(r.seq for r in df.select("seq").collect())


def _start(df, checkpoint: Path, sink: Seqs):  # type: ignore[no-untyped-def]
    return (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


async def test_purged_unread_messages(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "P", [("p.x", b"a") for _ in range(5)], subjects=["p.>"])
    first = Seqs()
    q = _start(stream_reader(spark, server.url, "P"), tmp_path / "c1", first)
    q.awaitTermination(120)
    assert first.seqs == [1, 2, 3, 4, 5]
    import shutil

    shutil.copytree(tmp_path / "c1", tmp_path / "c2")
    await fill(js, "P", [("p.x", b"b") for _ in range(5)])  # 6..10
    await js.purge_stream("P", seq=9)  # 6, 7, 8 were never read
    failing = _start(stream_reader(spark, server.url, "P"), tmp_path / "c1", Seqs())
    with pytest.raises(Exception, match=r"data loss on stream 'P'.*sequences 6\.\.8.*failOnDataLoss=false"):
        failing.awaitTermination(120)
    skipping = Seqs()
    q = _start(stream_reader(spark, server.url, "P", failOnDataLoss="false"), tmp_path / "c2", skipping)
    q.awaitTermination(120)
    assert q.exception() is None
    assert skipping.seqs == [9, 10]


async def test_deleted_stream(spark, server: ServerProcess, js, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "X", [("x.x", b"a") for _ in range(3)], subjects=["x.>"])
    sink = Seqs()
    q = _start(stream_reader(spark, server.url, "X"), tmp_path / "c1", sink)
    q.awaitTermination(120)
    assert sink.seqs == [1, 2, 3]
    import shutil

    shutil.copytree(tmp_path / "c1", tmp_path / "c2")
    await js.delete_stream("X")
    failing = _start(stream_reader(spark, server.url, "X"), tmp_path / "c1", Seqs())
    with pytest.raises(Exception, match=r"data loss on stream 'X'.*not found.*failOnDataLoss=false"):
        failing.awaitTermination(120)
    quiet = Seqs()
    q = _start(stream_reader(spark, server.url, "X", failOnDataLoss="false"), tmp_path / "c2", quiet)
    q.awaitTermination(120)
    assert q.exception() is None
    assert quiet.seqs == []
