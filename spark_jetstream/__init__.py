"""The `jetstream` Spark data source for NATS JetStream.

`register(spark)` makes `format("jetstream")` available in that session;
`JetStreamDataSource` is the class itself (for `spark.dataSource.register`).

Lazy (PEP 562): `import spark_jetstream` imports neither pyspark nor pyarrow;
the data source class is imported on first use. Subpackages by role:
`options` (every option, one grammar), `client` (the lean NATS client),
`read` and `write` (the two halves), `spark_internals` (what the connector
needs of PySpark beyond its public API), `local` (a local SparkSession).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_jetstream.datasource import JetStreamDataSource

__all__ = ["JetStreamDataSource", "register"]


def register(spark: Any) -> None:
    """Register the `jetstream` format with a SparkSession (reads split by its default parallelism)."""
    from spark_jetstream.datasource import JetStreamDataSource

    spark.dataSource.register(JetStreamDataSource.with_parallelism(_default_parallelism(spark)))


def _default_parallelism(spark: Any) -> int:
    """`spark.default.parallelism` (else the cores of the cluster); 1 when the session does not say."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except (AttributeError, NotImplementedError, RuntimeError):  # Spark Connect: no SparkContext
        value = spark.conf.get("spark.default.parallelism", None)
        return int(value) if value and str(value).isdigit() else 1


def __getattr__(name: str) -> Any:
    if name == "JetStreamDataSource":
        from spark_jetstream.datasource import JetStreamDataSource

        return JetStreamDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
