"""`bench_ceiling`: a do-nothing Python data source, the ceiling for any Python source here.

It yields, as Arrow record batches, exactly the rows the `jetstream` source
would yield for a stream of `rows` messages of `size` bytes (same schema:
subject, data, headers (null), stream, seq, timestamp), split into
`partitions` sequence ranges like the jetstream source with
`minPartitions`. It does no I/O: what it costs is Spark's own cost of a
Python source, so `jetstream read / ceiling` is the share of the achievable
rate the connector reaches. Batch (`spark.read`) and streaming
(`spark.readStream`, Trigger.AvailableNow) are both supported.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from spark_jetstream.read.arrow_rows import arrow_schema, read_schema

CHUNK_ROWS = 8192


@dataclass(frozen=True)
class RangePartition(InputPartition):
    lo: int  # first row (exclusive)
    hi: int  # last row (inclusive)


def _split(lo: int, hi: int, parts: int) -> list[RangePartition]:
    n = hi - lo
    if n <= 0:
        return []
    parts = max(1, min(parts, n))
    bounds = [lo + n * i // parts for i in range(parts + 1)]
    return [RangePartition(bounds[i], bounds[i + 1]) for i in range(parts)]


def _batches(lo: int, hi: int, size: int) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(True)
    payload = b"x" * size
    ts = pa.scalar(1_767_600_000_000_000, pa.timestamp("us", tz="UTC"))
    for start in range(lo, hi, CHUNK_ROWS):
        n = min(CHUNK_ROWS, hi - start)
        yield pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar("bench.ceiling", pa.string()), n),
                pa.repeat(pa.scalar(payload, pa.binary()), n),
                pa.nulls(n, type=schema.field("headers").type),
                pa.repeat(pa.scalar("CEILING", pa.string()), n),
                pa.array(range(start + 1, start + n + 1), type=pa.int64()),
                pa.repeat(ts, n),
            ],
            schema=schema,
        )


class CeilingDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_ceiling"

    def _params(self) -> tuple[int, int, int]:
        o = self.options
        return int(o.get("rows", "1000000")), int(o.get("size", "128")), int(o.get("partitions", "2"))

    def schema(self) -> StructType:
        return read_schema(True)

    def reader(self, schema: StructType) -> DataSourceReader:
        return _BatchReader(*self._params())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _StreamReader(*self._params())


class _BatchReader(DataSourceReader):
    def __init__(self, rows: int, size: int, partitions: int) -> None:
        self.rows, self.size, self.parts = rows, size, partitions

    def partitions(self) -> Sequence[InputPartition]:
        return _split(0, self.rows, self.parts) or [RangePartition(0, 0)]

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        yield from _batches(partition.lo, partition.hi, self.size)


class _StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, rows: int, size: int, partitions: int) -> None:
        self.rows, self.size, self.parts = rows, size, partitions

    def initialOffset(self) -> dict:
        return {"row": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        return {"row": self.rows}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return _split(int(start["row"]), int(end["row"]), self.parts)

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        yield from _batches(partition.lo, partition.hi, self.size)

    def commit(self, end: dict) -> None:
        pass
