"""Everything the connector relies on that is not PySpark's public API, in one place.

The Python Data Source API (`pyspark.sql.datasource`,
`pyspark.sql.streaming.datasource`) and `TaskContext` are public; these are
not, and a PySpark release may move them without notice. Each is named here,
with what breaks if it moves, and `tests/connector/integration/
test_spark_internals.py` fails when one does (the names exist, the
properties hold what the connector expects inside a streaming query, the
commit runner builds the writer).

- `QUERY_ID_PROPERTY`, `BATCH_ID_PROPERTY`: task local properties that Spark's
  micro-batch engine sets for the tasks of a streaming query
  (`StreamExecution.QUERY_ID_KEY`, `MicroBatchExecution.BATCH_ID_KEY` on the
  JVM side). The sinks scope their derived message ids with them (also a
  `df.write` inside `foreachBatch`, whose tasks see them); if they vanished,
  the stream sink would fail every streaming write.

The writers never inspect the call stack: Spark builds a stream writer again
on the driver for each `commit`, and the constructors do no I/O, so nothing
needs to know why it was built.

Imports nothing of pyspark itself: the names are data, so that the options,
client and read/write modules can use them without importing Spark.
"""

from __future__ import annotations

from typing import Final

QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"
BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
