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
  JVM side). The stream sink scopes its derived message ids with them; if
  they vanished, `streaming_scope` would fail every streaming write.
- `COMMIT_RUNNER_MODULE` and `built_for_commit()`: Spark builds the stream
  writer again, in a driver-side Python worker running this module, only to
  call `commit` / `abort`. The stream writer skips its server checks there by
  inspecting the call stack (`sys._getframe`); if the module were renamed the
  checks would simply run again on every commit (slower, and a brief server
  outage would fail a commit).

Imports nothing of pyspark itself: the names are data, so that the options,
client and read/write modules can use them without importing Spark.
"""

from __future__ import annotations

import sys
from typing import Final

QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"
BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
COMMIT_RUNNER_MODULE: Final = "pyspark.sql.worker.python_streaming_sink_runner"


def built_for_commit() -> bool:
    """True when Spark builds the calling writer only to call `commit`/`abort` on the driver."""
    frame = sys._getframe(1)
    while frame is not None:
        spec = frame.f_globals.get("__spec__")
        if COMMIT_RUNNER_MODULE in (frame.f_globals.get("__name__"), getattr(spec, "name", None)):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False
