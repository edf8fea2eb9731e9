"""`startingOffsets=latest` under a live publisher: nothing published after the start is lost.

Defect: `initialOffset` asked the server again on every call and Spark calls it
more than once for batch 0, so messages published between the first answer and
the first batch's planning were never read. The oracle is the server's own
answer: the query reaches JetStream through an `ApiProxy` that relays every
`STREAM.INFO` reply, so the test sees the last sequence of the first one, the
query's first resolution of `latest`. Every message after it must be read
exactly once (a batch that Spark runs again after a restart counts once: the
foreachBatch sink keeps the last run of each batch id).

Several starts (seeds printed), a publisher sending bursts of ten (about 10,000
messages a second), and one query stopped while it works and restarted on its
checkpoint. Both servers. The SIGKILL variant is test_latest_crash.py.
"""

from __future__ import annotations

import random
import threading
import uuid
from pathlib import Path

import pytest
from api_proxy import ApiProxy
from read_helpers import BurstPublisher, stream_reader

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.options import ConnectionOptions

pytestmark = pytest.mark.spark

RESTARTED = 12
SEEDS = (11, pytest.param(RESTARTED, marks=pytest.mark.spark_matrix), 13)


class Batches:
    """foreachBatch sink: the sequences of each batch id (a re-run replaces the earlier run)."""

    def __init__(self) -> None:
        self.by_batch: dict[int, list[int]] = {}
        self.got_rows = threading.Event()

    def __call__(self, df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        seqs = [r.seq for r in df.select("seq").collect()]
        self.by_batch[batch_id] = seqs
        if seqs:
            self.got_rows.set()

    def seqs(self) -> list[int]:
        return sorted(s for seqs in self.by_batch.values() for s in seqs)


def last_seq(url: str, stream: str) -> int:
    with LeanConnection.connect(ConnectionOptions(servers=(url,))) as conn:
        return int(conn.js_api(f"STREAM.INFO.{stream}")["state"]["last_seq"])


def start_query(spark, url: str, stream: str, prefix: str, checkpoint: Path, sink: Batches):  # type: ignore[no-untyped-def]
    df = stream_reader(spark, url, stream, startingOffsets="latest", apiPrefix=prefix, includeHeaders="false")
    return (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="50 milliseconds")
        .start()
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_latest_under_a_live_publisher_loses_nothing(
    spark, server: ServerProcess, tmp_path: Path, seed: int  # type: ignore[no-untyped-def]
) -> None:
    print(f"seed {seed}{' (stopped and restarted)' if seed == RESTARTED else ''}")
    rng = random.Random(seed)
    stream = "L" + uuid.uuid4().hex[:8]
    with LeanConnection.connect(ConnectionOptions(servers=(server.url,))) as conn:
        conn.js_api(f"STREAM.CREATE.{stream}", {"name": stream, "subjects": [f"{stream}.>"]})
    publisher = BurstPublisher(server.url, f"{stream}.x", seed)
    prefix = f"$PX{seed}.API"
    sink = Batches()
    checkpoint = tmp_path / "checkpoint"
    with ApiProxy(server.url, prefix, relay=("STREAM.INFO",)) as proxy:
        publisher.start()
        try:
            query = start_query(spark, server.url, stream, prefix, checkpoint, sink)
            try:
                assert sink.got_rows.wait(120), "the query read nothing"
                if seed == RESTARTED:
                    threading.Event().wait(rng.uniform(0, 0.2))  # land anywhere in the next batch
                    query.stop()
                    sink.got_rows.clear()
                    query = start_query(spark, server.url, stream, prefix, checkpoint, sink)
                    assert sink.got_rows.wait(120), "the restarted query read nothing"
            finally:
                publisher.stop()
            final = last_seq(server.url, stream)
            query.processAllAvailable()
            query.stop()
            assert query.exception() is None, query.exception()
        finally:
            publisher.stop_now.set()
    assert proxy.error is None
    first_info = next(reply for subject, reply in proxy.replies if f".STREAM.INFO.{stream}" in subject)
    resolved = int(first_info["state"]["last_seq"])
    seqs = sink.seqs()
    print(f"seed {seed}: first resolution {resolved}, read {len(seqs)} messages up to {final}")
    assert len(seqs) == len(set(seqs)), "a message was read twice"
    missing = sorted(set(range(resolved + 1, final + 1)) - set(seqs))
    assert not missing, f"{len(missing)} messages after the first resolution never read: {missing[:20]}"
    assert seqs == list(range(resolved + 1, max(final, seqs[-1]) + 1))  # and nothing before it
