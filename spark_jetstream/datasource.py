"""The `jetstream` DataSource: the entry point Spark instantiates with the user's options.

Reads are built here (options validated before anything runs: an unknown
option or a bad value raises `OptionError` naming it); writes are delegated to
`spark_jetstream.write.batch_writer` / `spark_jetstream.write.stream_writer`,
imported lazily so that the read half works on its own. The read schema is
fixed: `subject string, data binary, headers map<string,array<string>>,
stream string, seq long, timestamp timestamp` (no `headers` column when
includeHeaders=false).

Spark's default parallelism (what an unset `minPartitions` splits by, see
read/partitions.py) is not visible where Spark plans a Python data source's
read; `register(spark)` reads it from the session and registers
`with_parallelism(n)`, a subclass carrying it (pickled by value with the
class). The class registered by itself splits by 1.
"""

from __future__ import annotations

from dataclasses import replace
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
from spark_jetstream.read.batch_reader import JetStreamBatchReader
from spark_jetstream.read.stream_reader import JetStreamStreamReader


class JetStreamDataSource(DataSource):
    """`spark.read/readStream/write/writeStream.format("jetstream")`."""

    parallelism: int = 1  # Spark's default parallelism, see with_parallelism

    @classmethod
    def name(cls) -> str:
        return "jetstream"

    @classmethod
    def with_parallelism(cls, parallelism: int) -> type[JetStreamDataSource]:
        """This data source splitting reads by `parallelism` when minPartitions is not given."""
        # a name that does not resolve to the class: cloudpickle then pickles it by value
        return type(cls.__name__, (cls,), {"parallelism": max(1, int(parallelism)), "__qualname__": f"{cls.__qualname__}_{parallelism}"})

    def _read_options(self, streaming: bool) -> ReadOptions:
        return replace(ReadOptions.from_options(self.options, streaming=streaming), parallelism=self.parallelism)

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
        return JetStreamBatchReader(self._read_options(streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        return JetStreamStreamReader(self._read_options(streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from spark_jetstream.write.batch_writer import JetStreamBatchWriter

        writer: Any = JetStreamBatchWriter(self.options, schema, overwrite)
        return writer  # type: ignore[no-any-return]

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from spark_jetstream.write.stream_writer import JetStreamStreamWriter

        writer: Any = JetStreamStreamWriter(self.options, schema, overwrite)
        return writer  # type: ignore[no-any-return]
