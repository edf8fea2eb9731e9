"""The `jetstream` Spark data source for NATS JetStream.

Spark finds the data source by itself in every session (the `pyspark_jetstream`
module shipped with this distribution, Spark's lookup of `pyspark_*` modules);
`register(spark)` registers it where that lookup did not run or did not see
the connector. `JetStreamDataSource` is the class itself (for
`spark.dataSource.register`).

Lazy (PEP 562): `import spark_jetstream` imports neither pyspark nor pyarrow;
the data source class is imported on first use. Subpackages by role:
`options` (every option, one grammar), `client` (the lean NATS client),
`read` and `write` (the two halves), `spark_internals` (what the connector
needs of PySpark beyond its public API), `spark_features` (what the running
PySpark offers), `local` (a local SparkSession).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_jetstream.datasource import JetStreamDataSource

__all__ = ["JetStreamDataSource", "register"]

log = logging.getLogger(__name__)


def register(spark: Any) -> None:
    """Make `format("jetstream")` available in `spark` (nothing to do where Spark found it itself).

    Spark refuses to register a data source under a name its own lookup found
    (`DATA_SOURCE_ALREADY_EXISTS`): there the found one, the same class, stays.
    """
    from spark_jetstream.datasource import JetStreamDataSource

    try:
        spark.dataSource.register(JetStreamDataSource)
    except Exception as exc:  # pyspark's AnalysisException, classic or Spark Connect
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
            raise
        log.debug("jetstream: Spark registered the data source itself (pyspark_jetstream)")


def __getattr__(name: str) -> Any:
    if name == "JetStreamDataSource":
        from spark_jetstream.datasource import JetStreamDataSource

        return JetStreamDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
