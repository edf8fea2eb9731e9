"""Batch reads: `spark.read.format("jetstream")`.

The driver resolves the range of each stream (option `stream` may name
several) once, in `partitions()`: start from
`startingOffsets` / `startingTimestamp`, end from `endingOffsets` /
`endingTimestamp` (default: the stream's last sequence at planning time),
then splits it (`partitions.plan_partitions`). Executors read their ranges
with `partitions.read_partition`. A range that starts below the stream's first
sequence is data loss: an error with `failOnDataLoss=true`, a warning and a
skip otherwise; executors check again before reading (partitions.check_range).

Option `consumer` (an operator's pull consumer, read-only rights on it): the
read shows what the consumer would deliver next (up to endingOffsets /
endingTimestamp), and never acknowledges it: the driver pulls it
(`ConsumerFeed.peek`, at most `BATCH_MESSAGES` / `BATCH_BYTES`, or an error
naming the bound), hands it straight back (`-NAK`: due again at once for the
consumer's other readers) and the partitions carry it to the executors.

Filter pushdown (Spark 4.1+): `PushdownBatchReader` adds `pushFilters`,
which narrows the ranges and the subject filter by the query's filters on
`seq`, `timestamp` and `subject` (pushdown.py) before `partitions()` plans
them. The data source uses it only with option `filterPushdown=true`: Spark
refuses a reader that implements `pushFilters` unless its conf
`spark.sql.python.filterPushdown.enabled` is on, and the data source cannot
see that conf, so the user turns on both (Spark's error names its conf).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_jetstream.client import LeanConnection, connect
from spark_jetstream.options import ReadOptions
from spark_jetstream.read.carried import CarriedPartition, carry, read_carried
from spark_jetstream.read.consumer_feed import BATCH_BYTES, BATCH_MESSAGES, ConsumerFeed
from spark_jetstream.read.offsets import (
    DataLossError,
    StreamMissingError,
    data_loss_message,
    resolve_end,
    resolve_start,
    seq_for_time,
    stream_state,
)
from spark_jetstream.read.partitions import SeqRangePartition, plan_partitions, read_partition
from spark_jetstream.read.pushdown import Pushdown, push_filters
from spark_jetstream.shipping import Shipped

log = logging.getLogger(__name__)


class JetStreamBatchReader(Shipped, DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.pushdown = Pushdown()

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        parts: list[InputPartition] = []
        with connect(opts.connection) as conn:
            if opts.consumer:
                parts += self._peek(conn)
            else:
                for stream in opts.streams:
                    parts += self._plan(conn, stream, len(parts))
        if not parts:
            # Spark wants at least one partition; an empty range reads nothing
            parts = [SeqRangePartition(0, opts.stream, 0, 0, opts.subjects)]
        return parts

    def _peek(self, conn: LeanConnection) -> list[CarriedPartition]:
        """Option consumer: what it would deliver next, carried by the partitions (see the module doc)."""
        opts = self.options
        feed = ConsumerFeed(opts, lambda fn: fn(conn))
        ending = opts.end_position(opts.stream)
        msgs = feed.peek(None if ending == "latest" else int(ending), opts.ending_timestamp_ms,
                         BATCH_MESSAGES, BATCH_BYTES)
        if not msgs:
            return []
        return carry(opts.stream, msgs[0].seq - 1, msgs[-1].seq, msgs, with_headers=opts.include_headers,
                     min_partitions=opts.min_partitions, max_per_partition=opts.max_messages_per_partition)

    def _plan(self, conn: LeanConnection, stream: str, first_index: int) -> list[SeqRangePartition]:
        opts = self.options
        try:
            state = stream_state(conn, stream)
        except StreamMissingError as exc:
            raise DataLossError(f"{exc}: nothing to read (option stream)") from None
        start = resolve_start(conn, opts, state)
        end = resolve_end(conn, opts, state)
        pd = self.pushdown
        if pd.empty:
            return []
        if pd.after_seq is not None:
            start = max(start, pd.after_seq)
        if pd.until_seq is not None:
            end = min(end, pd.until_seq)
        if pd.from_ms is not None and end > start:
            start = max(start, seq_for_time(conn, opts, state, pd.from_ms) - 1)
        if pd.before_ms is not None and end > start:
            end = min(end, seq_for_time(conn, opts, state, pd.before_ms) - 1)
        if end > start and start + 1 < state.first_seq:
            lost_hi = min(end, state.first_seq - 1)
            message = data_loss_message(stream, start + 1, lost_hi, "purged, expired or removed by retention")
            if opts.fail_on_data_loss:
                raise DataLossError(message)
            log.warning("skipping: %s", message)
            start = lost_hi
        return plan_partitions(
            stream,
            start,
            max(start, end),
            subjects=opts.subjects if pd.subjects is None else pd.subjects,
            min_partitions=opts.min_partitions,
            max_per_partition=opts.max_messages_per_partition,
            avg_msg_bytes=state.avg_msg_bytes,
            first_index=first_index,
            fail_on_data_loss=opts.fail_on_data_loss,
            direct=opts.read_mode == "direct",
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, CarriedPartition):
            yield from read_carried(partition, self.options.include_headers)
            return
        assert isinstance(partition, SeqRangePartition)
        yield from read_partition(self.options.connection, partition, self.options.include_headers)


class PushdownBatchReader(JetStreamBatchReader):
    """The batch reader with filter pushdown (option filterPushdown, Spark 4.1+)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        self.pushdown, kept = push_filters(filters, subjects_option=bool(self.options.subjects))
        if self.pushdown.pushed or self.pushdown.from_ms is not None or self.pushdown.before_ms is not None:
            log.info("jetstream batch read: filters narrow the read (%s)", self.pushdown)
        return kept
