"""The `jetstream` Spark data source for NATS JetStream.

`register(spark)` makes `format("jetstream")` available in that session;
`JetStreamDataSource` is the class itself (for `spark.dataSource.register`).
"""

from __future__ import annotations

from typing import Any

from spark_jetstream.datasource import JetStreamDataSource

__all__ = ["JetStreamDataSource", "register"]


def register(spark: Any) -> None:
    """Register the `jetstream` format with a SparkSession."""
    spark.dataSource.register(JetStreamDataSource)
