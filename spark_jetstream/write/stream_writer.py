"""The Arrow stream writer of the sink (Spark 4.1+: `DataSourceStreamArrowWriter`).

Imported by the data source only where that class exists; the sink itself
(options, columns, ids, commit and abort) is stream_sink.py, shared with the
row-based writer of Spark 4.0.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from spark_jetstream.write.stream_sink import StreamSink


class JetStreamStreamWriter(StreamSink, DataSourceStreamArrowWriter):
    """The stream sink on Spark 4.1+: Arrow record batches in."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._publish(iterator)
