"""The batch sink: `df.write.format("jetstream").mode("append").save()`.

Built on the driver (inside Spark's Python planner worker) and pickled to the
executors. Construction does every check that must come before anything is
published: options (options/write.py), columns (schema.py), the target
stream and its dedup window (dedup_check.py). It also fixes the write id, the
scope of derived message ids for rows without `msg_id` or source
coordinates: a retried task re-publishes the same ids; a new `df.write` gets
a new write id.

Mode: `append` only (a stream is append-only); `overwrite` is refused.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark_jetstream.options import OptionError, WriteOptions
from spark_jetstream.write.dedup_check import TargetInfo, check_target
from spark_jetstream.write.schema import WriteColumns, validate_write_schema
from spark_jetstream.write.sink_task import publish_batches, summarize

log = logging.getLogger(__name__)


class JetStreamBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, Any], schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise OptionError(
                "save mode overwrite is not supported by the jetstream sink: a stream is "
                "append-only; use mode('append')"
            )
        self.options: WriteOptions = WriteOptions.from_options(options)
        self.columns: WriteColumns = validate_write_schema(schema, self.options.subject)
        self.target: TargetInfo = check_target(self.options)
        self.write_id: str = uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        ctx = TaskContext.get()
        partition_id = ctx.partitionId() if ctx is not None else 0
        return publish_batches(self.options, self.columns, iterator, self.write_id, partition_id)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        log.info("jetstream sink write %s committed: %s", self.write_id, summarize(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        log.warning(
            "jetstream sink write %s aborted; messages already acked stay in the stream: %s",
            self.write_id,
            summarize(messages),
        )
