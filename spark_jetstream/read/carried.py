"""Input partitions that carry their messages (option `consumer`): executors do no NATS I/O.

Reading through an operator's consumer, the driver pulls a micro-batch's
messages itself (consumer_feed.py); `carry` packs them into
`CarriedPartition`s, pickled to the executors with the task, and
`read_carried` turns one into an Arrow batch there.

Splitting: at least `min_partitions` (when given), no partition with more than
`max_per_partition` messages, and none holding much more than
`PARTITION_BYTES` (a task travels to its executor in Spark's task message,
whose size Spark warns about from 1000 KiB on and refuses beyond
`spark.rpc.message.maxSize`). Sizes differ by at most one message. The split
depends only on the messages (the same batch, replayed after a crash, gets
the same partitions: the sink's content ids carry the partition).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from spark_jetstream.client.msg_runs import Chunk
from spark_jetstream.read.arrow_rows import arrow_schema, chunk_to_batch
from spark_jetstream.read.consumer_pull import Delivered
from spark_jetstream.read.partitions import partition_count

__all__ = ["PARTITION_BYTES", "CarriedPartition", "carry", "read_carried"]

PARTITION_BYTES: Final = 768 * 1024
_PER_MESSAGE_BYTES: Final = 48  # what pickling adds per message (lengths, the sequence, the time)


@dataclass(frozen=True)
class CarriedPartition(InputPartition):
    """Messages of `stream` in (start, end], carried to the executor."""

    index: int
    stream: str
    start: int
    end: int
    chunk: Chunk


def carry(
    stream: str,
    start: int,
    end: int,
    msgs: Sequence[Delivered],
    *,
    with_headers: bool,
    min_partitions: int | None,
    max_per_partition: int,
    first_index: int = 0,
) -> list[CarriedPartition]:
    """The messages of (start, end] as partitions (see the module doc); none when there are none."""
    if not msgs:
        return []
    total_bytes = sum(m.size + _PER_MESSAGE_BYTES for m in msgs)
    by_count = partition_count(len(msgs), min_partitions=min_partitions or 1, max_per_partition=max_per_partition)
    count = min(len(msgs), max(by_count, -(-total_bytes // PARTITION_BYTES)))
    base, extra = divmod(len(msgs), count)
    parts: list[CarriedPartition] = []
    lo = 0
    for i in range(count):
        hi = lo + base + (1 if i < extra else 0)
        part = msgs[lo:hi]
        chunk = Chunk(
            [m.subject for m in part],
            [m.data for m in part],
            [m.headers for m in part] if with_headers else None,
            [m.seq for m in part],
            [m.ts_ns for m in part],
        )
        first = start if i == 0 else msgs[lo - 1].seq
        last = end if i == count - 1 else part[-1].seq
        parts.append(CarriedPartition(first_index + i, stream, first, last, chunk))
        lo = hi
    return parts


def read_carried(partition: CarriedPartition, include_headers: bool) -> Iterator[pa.RecordBatch]:
    """The partition's messages as one Arrow batch."""
    if len(partition.chunk):
        yield chunk_to_batch(partition.chunk, partition.stream, arrow_schema(include_headers))
