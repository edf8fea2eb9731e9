"""The batch sink: `df.write.format("jetstream").mode("append").save()`.

Built on the driver (inside Spark's Python planner worker) and pickled to the
executors. The constructor checks options (options/write.py) and columns
(schema.py) and does no I/O. Message ids (msg_ids.py) are scoped by
`msgIdScope` and, for a `df.write` inside `foreachBatch`, by the streaming
query id and batch id the task sees: a retried task, and the same write of
a replayed micro-batch, repeat their ids. There is no random write id: two
writes of the same rows in the same scope are deduplicated (give them
different `msgIdScope`s to keep both).

`commit` checks the dedup window of the streams written to
(commit_report.py). Mode: `append` only (a stream is append-only);
`overwrite` is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark_jetstream.options import OptionError, WriteOptions
from spark_jetstream.shipping import Shipped
from spark_jetstream.write.commit_report import report_commit
from spark_jetstream.write.msg_ids import id_scope, streaming_scope
from spark_jetstream.write.schema import WriteColumns, validate_write_schema
from spark_jetstream.write.sink_task import publish_batches, summarize

log = logging.getLogger(__name__)


class JetStreamBatchWriter(Shipped, DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, Any], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise OptionError(
                "save mode overwrite is not supported by the jetstream sink: a stream is "
                "append-only; use mode('append')"
            )
        self.options: WriteOptions = WriteOptions.from_options(options)
        self.columns: WriteColumns = validate_write_schema(
            schema, self.options.subject, self.options.msg_id_mode, self.options.msg_id_columns
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        ctx = TaskContext.get()
        partition_id = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        streaming = streaming_scope(ctx.getLocalProperty) if ctx is not None else None
        scope = id_scope(self.columns.id_mode, self.options.msg_id_scope, streaming)
        return publish_batches(
            self.options, self.columns, iterator, scope, partition_id, attempt=attempt
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        report_commit(self.options, messages, "write")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "jetstream sink write aborted; messages already acked stay in the stream: %s",
            summarize(messages),
        )
