"""Input partitions: a sequence range (start, end] of one stream, split for Spark tasks.

`split_range` cuts (start, end] into contiguous, non-overlapping sub-ranges
that cover it exactly: at least `min_partitions` (never more than there are
sequences) and none longer than `max_per_partition` sequences; sizes differ
by at most one. Without `min_partitions` (the option not given) the range is
cut into as many partitions of at least `AUTO_MIN_MESSAGES` sequences as it
holds, so that a large batch uses the cores there are (Spark runs the tasks in
waves where there are fewer) and a small one stays one task. The split does
not depend on the cluster: Spark auto-registers the source in every session
(pyspark_jetstream) where nothing can hand it the session's parallelism, and
a registered and an auto-registered source split alike. The count depends
only on the range and these numbers, never on timing: a replayed micro-batch
gets the same partitions (the sink's content ids carry the partition). A partition is pure data (picklable, no connection): the
executor reads exactly its range with its own ephemeral consumer, so a retried
task reads the same rows. `read_partition` is that executor-side read: one
lean connection, one bounded ephemeral consumer (or, readMode=direct, no
consumer: direct_get.py), Arrow batches out; before it
`check_range` checks again that the range is still in the stream (data lost
after planning honours failOnDataLoss, as Spark's Kafka source does).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from spark_jetstream.client import LeanConnection, connect
from spark_jetstream.client.msg_runs import Chunk, RawChunk
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.read.arrow_rows import arrow_schema, chunk_to_batch
from spark_jetstream.read.direct_get import fetch_range_direct, has_batch_direct_get
from spark_jetstream.read.fetch import FetchSpec, fetch_range, fetch_range_by_get
from spark_jetstream.read.offsets import (
    DataLossError,
    StreamMissingError,
    StreamState,
    data_loss_message,
    stream_state,
)
from spark_jetstream.shipping import Shipped

log = logging.getLogger(__name__)

# The smallest partition an automatic split makes. Measured on the 2-core test
# machine (batch read -> count of 128 B messages, 1 vs 2 partitions, machine loaded):
# a second partition cost 8-19% at 25k and 100k messages on both servers and gained
# 8% at 300k on the bundled one, so a range splits from 300k messages on.
AUTO_MIN_MESSAGES: Final = 150_000


@dataclass(frozen=True)
class SeqRangePartition(Shipped, InputPartition):
    """Messages of `stream` with start < seq <= end that match `subjects`."""

    index: int
    stream: str
    start: int
    end: int
    subjects: tuple[str, ...] = ()
    avg_msg_bytes: int = 256
    fail_on_data_loss: bool = True
    direct: bool = False  # readMode=direct: by sequence, no consumer (direct_get.py)

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"partition end {self.end} is before its start {self.start}")

    @property
    def size(self) -> int:
        return self.end - self.start


def partition_count(total: int, *, min_partitions: int | None, max_per_partition: int) -> int:
    """How many partitions a range of `total` sequences gets (see the module docstring)."""
    if (min_partitions is not None and min_partitions < 1) or max_per_partition < 1:
        raise ValueError("min_partitions and max_per_partition must be >= 1")
    wanted = min_partitions if min_partitions is not None else total // AUTO_MIN_MESSAGES
    return max(1, min(total, max(wanted, -(-total // max_per_partition))))


def split_range(
    start: int,
    end: int,
    *,
    min_partitions: int | None = 1,
    max_per_partition: int = 500_000,
) -> list[tuple[int, int]]:
    """(start, end] as a list of (lo, hi] ranges; empty when end <= start."""
    total = end - start
    if total <= 0:
        return []
    count = partition_count(total, min_partitions=min_partitions, max_per_partition=max_per_partition)
    base, extra = divmod(total, count)
    ranges = []
    lo = start
    for i in range(count):
        hi = lo + base + (1 if i < extra else 0)
        ranges.append((lo, hi))
        lo = hi
    return ranges


def plan_partitions(
    stream: str,
    start: int,
    end: int,
    *,
    subjects: tuple[str, ...] = (),
    min_partitions: int | None = 1,
    max_per_partition: int = 500_000,
    avg_msg_bytes: int = 256,
    first_index: int = 0,
    fail_on_data_loss: bool = True,
    direct: bool = False,
) -> list[SeqRangePartition]:
    return [
        SeqRangePartition(first_index + i, stream, lo, hi, subjects, avg_msg_bytes, fail_on_data_loss, direct)
        for i, (lo, hi) in enumerate(
            split_range(start, end, min_partitions=min_partitions, max_per_partition=max_per_partition)
        )
    ]


def check_range(conn: LeanConnection, partition: SeqRangePartition) -> tuple[int, StreamState | None]:
    """The executor's data-loss check, just before reading: the start to read after.

    Planning happened earlier on the driver; since then messages of the range
    may have been purged or aged out (stream first sequence above the range's
    start), or the stream deleted or re-created (missing, or its last sequence
    below the range's end). With failOnDataLoss that fails the task naming the
    stream and the range; otherwise it logs and reads what is left.
    """
    lo, hi = partition.start, partition.end
    why = ""
    try:
        state = stream_state(conn, partition.stream)
    except StreamMissingError:
        state, why = None, "stream not found (deleted?)"
    if state is not None and state.last_seq < hi:
        why = f"the stream's last sequence is {state.last_seq} (deleted and re-created?)"
    if why:
        message = data_loss_message(partition.stream, lo + 1, hi, why)
        if partition.fail_on_data_loss:
            raise DataLossError(message)
        log.warning("skipping: %s", message)
        return hi, None
    assert state is not None
    if lo + 1 >= state.first_seq:
        return lo, state
    lost_hi = min(hi, state.first_seq - 1)
    message = data_loss_message(partition.stream, lo + 1, lost_hi, "purged, expired or removed by retention after planning")
    if partition.fail_on_data_loss:
        raise DataLossError(message)
    log.warning("skipping: %s", message)
    return lost_hi, state


def _fetcher(conn: LeanConnection, partition: SeqRangePartition, state: StreamState | None) -> Callable[
    [LeanConnection, FetchSpec], Iterator[Chunk | RawChunk]
]:
    """How this partition is read: a read consumer, or (readMode=direct) batched direct gets where the
    stream and the server have them, else one message get per message."""
    if not partition.direct:
        return fetch_range
    version = str(conn.info.raw.get("version", "")) if conn.info is not None else ""
    if state is not None and state.allow_direct and has_batch_direct_get(version):
        return fetch_range_direct
    why = "does not allow direct get" if state is None or not state.allow_direct else f"runs nats-server {version}"
    if why not in _WARNED:
        _WARNED.add(why)
        log.warning(
            "readMode=direct: stream %s %s (batched direct get needs allow_direct and nats-server "
            "2.11+): reading with one message get per message, much slower", partition.stream, why,
        )
    return fetch_range_by_get


_WARNED: set[str] = set()


def read_partition(
    connection: ConnectionOptions, partition: SeqRangePartition, include_headers: bool
) -> Iterator[pa.RecordBatch]:
    """Every message of the partition's range that matches its filter, as Arrow batches."""
    if partition.size <= 0:
        return
    schema = arrow_schema(include_headers)
    rows = 0
    with connect(connection) as conn:  # the process's pooled connection (client/pool.py)
        start, state = check_range(conn, partition)
        fetch = _fetcher(conn, partition, state)
        spec = FetchSpec(
            stream=partition.stream,
            start=start,
            end=partition.end,
            filters=partition.subjects,
            with_headers=include_headers,
            avg_msg_bytes=partition.avg_msg_bytes,
        )
        for chunk in fetch(conn, spec):
            if len(chunk):
                rows += len(chunk)
                yield chunk_to_batch(chunk, partition.stream, schema)
    log.debug("read %d messages of %s (%d, %d]", rows, partition.stream, partition.start, partition.end)
