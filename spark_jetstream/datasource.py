"""The `jetstream` DataSource: the entry point Spark instantiates with the user's options.

Reads are built here (options validated before anything runs: an unknown
option or a bad value raises `OptionError` naming it); writes are delegated to
`spark_jetstream.write.batch_writer` / `spark_jetstream.write.stream_writer`,
imported lazily so that the read half works on its own. The read schema is
fixed: `subject string, data binary, headers map<string,array<string>>,
stream string, seq long, timestamp timestamp` (no `headers` column when
includeHeaders=false).

Every Spark from 4.0 on: the reader and writer classes are picked from what
the running PySpark offers (spark_features.py), and the modules of APIs a
version lacks are imported only when it has them:
- streaming reads: `stream_reader.JetStreamStreamReader` (4.2+: read limits,
  AvailableNow) or `legacy_stream_reader.LegacyStreamReader` (4.0, 4.1);
  options that need read limits are refused before 4.2, naming the option
  and the version;
- the stream sink: `stream_writer.JetStreamStreamWriter` (Arrow, 4.1+) or
  `stream_sink.RowStreamWriter` (rows, 4.0), with the same message ids;
- batch reads and writes: the same everywhere; option filterPushdown (4.1+)
  gives a batch reader with `pushFilters`.

`features` (a class attribute, None: detect) lets a test subclass drive the
paths of an older Spark on a newer one.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from spark_jetstream.options import OptionError, ReadOptions
from spark_jetstream.options.table import Scope, option_value
from spark_jetstream.read.arrow_rows import read_schema
from spark_jetstream.read.batch_reader import JetStreamBatchReader, PushdownBatchReader
from spark_jetstream.shipping import Shipped
from spark_jetstream.spark_features import SparkFeatures, detect


class JetStreamDataSource(Shipped, DataSource):
    """`spark.read/readStream/write/writeStream.format("jetstream")`."""

    features: SparkFeatures | None = None  # None: what the running PySpark offers

    @classmethod
    def name(cls) -> str:
        return "jetstream"

    @classmethod
    def spark(cls) -> SparkFeatures:
        return cls.features or detect()

    def _read_options(self, streaming: bool) -> ReadOptions:
        spark = self.spark()
        return ReadOptions.from_options(self.options, streaming=streaming, spark=(spark.api_level, spark.version))

    def _include_headers(self) -> bool:
        return bool(option_value(self.options, "includeHeaders", Scope.READ))

    def schema(self) -> StructType:
        return read_schema(self._include_headers())

    def _check_schema(self, schema: StructType) -> None:
        expected = read_schema(self._include_headers())
        got = [(f.name, f.dataType) for f in schema.fields]
        if got != [(f.name, f.dataType) for f in expected.fields]:
            raise OptionError(
                f"the jetstream source has a fixed schema ({expected.simpleString()}); "
                f"do not set another one (got {schema.simpleString()})"
            )

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        options = self._read_options(streaming=False)
        if options.filter_pushdown:
            return PushdownBatchReader(options)
        return JetStreamBatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        options = self._read_options(streaming=True)
        spark = self.spark()
        if spark.read_limits:
            from spark_jetstream.read.stream_reader import JetStreamStreamReader

            return JetStreamStreamReader(options)
        from spark_jetstream.read.legacy_stream_reader import LegacyStreamReader

        return LegacyStreamReader(options, spark_version=spark.version)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from spark_jetstream.write.batch_writer import JetStreamBatchWriter

        writer: Any = JetStreamBatchWriter(self.options, schema, overwrite)
        return writer  # type: ignore[no-any-return]

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        if self.spark().stream_arrow_writer:
            from spark_jetstream.write.stream_writer import JetStreamStreamWriter

            writer: Any = JetStreamStreamWriter(self.options, schema, overwrite)
        else:
            from spark_jetstream.write.stream_sink import RowStreamWriter

            writer = RowStreamWriter(self.options, schema, overwrite)
        return writer  # type: ignore[no-any-return]
