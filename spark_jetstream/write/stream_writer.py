"""The streaming sink: `df.writeStream.format("jetstream")`.

Built on the driver when the query starts (so bad options, columns or a
missing stream fail the query before any batch runs) and pickled to the
executors. Each task publishes its rows with deterministic message ids scoped
by the checkpointed query id and the micro-batch id (task local properties,
see msg_ids.py), or by `msg_id` / source coordinates: when Spark replays a
batch after a failure, the ids repeat and the stream's dedup window drops the
copies. `commit`/`abort` only log: every message was acked inside its task.

Spark builds the writer again in a driver-side Python process for every
batch's `commit`/`abort` (recognised by `spark_internals.built_for_commit`).
Those only log, so the server checks are skipped there: a server that is
briefly down while a batch commits must not fail the query, and a commit must
not cost a round trip.

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
from spark_jetstream.spark_internals import built_for_commit
from spark_jetstream.write.dedup_check import TargetInfo, check_target
from spark_jetstream.write.msg_ids import streaming_scope
from spark_jetstream.write.schema import WriteColumns, validate_write_schema
from spark_jetstream.write.sink_task import publish_batches, summarize

log = logging.getLogger(__name__)

class JetStreamStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: Mapping[str, Any], schema: StructType, overwrite: bool) -> None:
        self.options: WriteOptions = WriteOptions.from_options(options)
        self.columns: WriteColumns = validate_write_schema(schema, self.options.subject)
        self.target: TargetInfo | None = None if built_for_commit() else check_target(self.options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        ctx = TaskContext.get()
        if ctx is None:
            raise RuntimeError("the jetstream stream sink must run inside a Spark task")
        scope = streaming_scope(ctx.getLocalProperty)
        return publish_batches(self.options, self.columns, iterator, scope, ctx.partitionId())

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        log.info("jetstream sink batch %d committed: %s", batchId, summarize(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        log.warning(
            "jetstream sink batch %d aborted; acked messages stay and a replay is deduplicated: %s",
            batchId,
            summarize(messages),
        )
