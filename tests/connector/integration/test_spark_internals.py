"""What the connector relies on beyond PySpark's public API (spark_internals.py) still holds.

Fails when a PySpark release moves one of them: the task local properties
carry the query id and the micro-batch id inside a streaming query's write
tasks. Checked with a tiny recording data source (no server). Also records
that Spark builds the writer several times on the driver (for planning and
for each commit), which is why the writers' constructors do no I/O.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark import TaskContext
from pyspark.cloudpickle import register_pickle_by_value
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from spark_jetstream.spark_internals import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY

# Spark's workers cannot import this test module: ship its classes by value.
register_pickle_by_value(sys.modules[__name__])

ROWS, PER_BATCH = 10, 5


def record(directory: str, kind: str, **fields: Any) -> None:
    path = Path(directory) / f"{kind}-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(fields))


def records(directory: Path, kind: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob(f"{kind}-*.json"))]


@dataclass
class Range(InputPartition):
    lo: int
    hi: int


@dataclass
class Properties(WriterCommitMessage):
    query_id: str | None
    batch_id: str | None


class CountingReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def initialOffset(self) -> dict:
        return {"n": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(PER_BATCH)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        step = limit.max_rows if isinstance(limit, ReadMaxRows) else ROWS
        return {"n": min(ROWS, start["n"] + step)}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [Range(start["n"], end["n"])]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        assert isinstance(partition, Range)
        for i in range(partition.lo, partition.hi):
            yield (i,)


class RecordingWriter(DataSourceStreamWriter):
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.pid = os.getpid()
        record(directory, "built", pid=self.pid)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        ctx = TaskContext.get()
        assert ctx is not None
        return Properties(ctx.getLocalProperty(QUERY_ID_PROPERTY), ctx.getLocalProperty(BATCH_ID_PROPERTY))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        props = [(m.query_id, m.batch_id) for m in messages if isinstance(m, Properties)]
        record(self.directory, "commit", batch=batchId, props=props)


class RecordingSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "sjtest_recording"

    def schema(self) -> str:
        return "n long"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return CountingReader()

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        return RecordingWriter(self.options["dir"])


@pytest.mark.timeout(300)
def test_a_streaming_query_shows_what_the_connector_relies_on(spark: SparkSession, tmp_path: Path) -> None:
    spark.dataSource.register(RecordingSource)
    out = tmp_path / "records"
    out.mkdir()
    query = (
        spark.readStream.format("sjtest_recording")
        .load()
        .writeStream.format("sjtest_recording")
        .option("dir", str(out))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()
    commits = sorted(records(out, "commit"), key=lambda r: r["batch"])
    assert [c["batch"] for c in commits] == [0, 1]
    # the task local properties: the query id and the micro-batch id of each write task
    for c in commits:
        assert c["props"] == [[str(query.id), str(c["batch"])]], c
    # Spark builds the writer more than once on the driver (planning, then for the commits)
    assert len(records(out, "built")) >= 2
