"""The streaming sink: `df.writeStream.format("jetstream")`.

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
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark_jetstream.options import WriteOptions
from spark_jetstream.spark_internals import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from spark_jetstream.write.commit_report import report_commit
from spark_jetstream.write.msg_ids import id_scope, streaming_scope
from spark_jetstream.write.schema import WriteColumns, validate_write_schema
from spark_jetstream.write.sink_task import publish_batches, summarize

log = logging.getLogger(__name__)


class JetStreamStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: Mapping[str, Any], schema: StructType, overwrite: bool) -> None:
        self.options: WriteOptions = WriteOptions.from_options(options)
        self.columns: WriteColumns = validate_write_schema(
            schema, self.options.subject, self.options.msg_id_mode, self.options.msg_id_columns
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
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
            self.options, self.columns, iterator, scope, ctx.partitionId(), attempt=ctx.attemptNumber()
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        report_commit(self.options, messages, f"batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        log.warning(
            "jetstream sink batch %d aborted; acked messages stay and a replay is deduplicated: %s",
            batchId,
            summarize(messages),
        )
