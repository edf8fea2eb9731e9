"""The streaming sink: `df.writeStream.format("jetstream")`, what its two writer classes share.

Built on the driver when the query starts and pickled to the executors; the
constructor checks options and columns (bad ones fail the query before any
batch runs) and does no I/O. Spark builds the writer again on the driver for
every batch's `commit`/`abort`, so a constructor that asked the server would
make a brief server outage fail the query.

Each task publishes its rows with deterministic message ids (msg_ids.py)
scoped by the checkpointed query id and the micro-batch id (task local
properties): when Spark replays a batch after a failure, the ids repeat and
the stream's dedup window drops the copies. `commit` logs, warns about
duplicates in first attempts and checks the dedup window of the streams
written to (commit_report.py); `abort` only logs: every message was acked
inside its task.

All output modes are accepted; rows are appended (complete mode re-publishes
the whole result each batch, with new ids per batch).

Two writer classes, one behaviour: `stream_writer.JetStreamStreamWriter`
takes Arrow record batches (`DataSourceStreamArrowWriter`, Spark 4.1+);
`RowStreamWriter` here (Spark 4.0 has only the row-based
`DataSourceStreamWriter`) gathers the rows into record batches of the columns
the sink uses (`rows_to_batches`) and hands them to the same task
(sink_task.py): the same subjects, headers, payloads and message ids for the
same rows (values of msgIdColumns of types whose Python form differs from
their Arrow form, such as timestamps, may hash differently on the two paths).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any, Final

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark_jetstream.options import WriteOptions
from spark_jetstream.spark_internals import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from spark_jetstream.write.commit_report import report_commit
from spark_jetstream.write.msg_ids import id_scope, streaming_scope
from spark_jetstream.write.schema import WriteColumns, validate_write_schema
from spark_jetstream.write.sink_task import publish_batches, summarize

__all__ = ["RowStreamWriter", "StreamSink", "rows_to_batches"]

from spark_jetstream.shipping import Shipped

log = logging.getLogger(__name__)

ROWS_PER_BATCH: Final = 8192  # rows gathered into one record batch by the row-based writer


class StreamSink(Shipped, DataSourceStreamWriter):
    """What both stream writers share: options, columns, the task's scope, commit and abort."""

    def __init__(self, options: Mapping[str, Any], schema: StructType, overwrite: bool) -> None:
        self.options: WriteOptions = WriteOptions.from_options(options)
        self.columns: WriteColumns = validate_write_schema(
            schema, self.options.subject, self.options.msg_id_mode, self.options.msg_id_columns
        )
        self.schema = schema

    def _publish(self, batches: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        ctx = TaskContext.get()
        if ctx is None:
            raise RuntimeError("the jetstream stream sink must run inside a Spark task")
        streaming = streaming_scope(ctx.getLocalProperty)
        if streaming is None:
            raise RuntimeError(
                "the jetstream stream sink runs outside a streaming query: the task local "
                f"properties {QUERY_ID_PROPERTY} / {BATCH_ID_PROPERTY} are missing"
            )
        scope = id_scope(self.columns.id_mode, self.options.msg_id_scope, streaming)
        return publish_batches(
            self.options, self.columns, batches, scope, ctx.partitionId(), attempt=ctx.attemptNumber()
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        report_commit(self.options, messages, f"batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning(
            "jetstream sink batch %d aborted; acked messages stay and a replay is deduplicated: %s",
            batchId,
            summarize(messages),
        )


class RowStreamWriter(StreamSink):
    """The stream sink on Spark 4.0: rows in, gathered into record batches of the used columns."""

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return self._publish(rows_to_batches(iterator, self.schema, self.columns))


def rows_to_batches(rows: Iterable[Row], schema: StructType, columns: WriteColumns) -> Iterator[pa.RecordBatch]:
    """The columns the sink uses, `ROWS_PER_BATCH` rows at a time, as Arrow record batches."""
    from pyspark.sql.pandas.types import to_arrow_schema

    names = list(dict.fromkeys([*columns.used(), *columns.id_columns]))
    arrow = to_arrow_schema(StructType([schema[n] for n in names]))
    it = iter(rows)
    while chunk := list(islice(it, ROWS_PER_BATCH)):
        yield pa.RecordBatch.from_pylist([{n: row[n] for n in names} for row in chunk], schema=arrow)
