"""A local SparkSession that works on a machine with no network.

Tests, jobs and notebooks use `local_spark_session()`: it points Spark's Python
workers at this interpreter (`PYSPARK_PYTHON`), binds Spark to 127.0.0.1 (or
workers fail with "Python worker failed to connect back"), keeps shuffles
small, and turns the UI off. It returns the existing session if there is one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession


def local_spark_session(
    app_name: str = "spark-jetstream",
    cores: int | str = "*",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
