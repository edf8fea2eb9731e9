"""Spark's Python workers import the installed connector, not the source tree.

The workers start as `python -m pyspark.daemon` in the driver's working directory
(the repository root when the tests run), which Python would put first on their
path; the `spark` fixture turns that off (PYTHONSAFEPATH), so a packaging mistake
fails on the executors too.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

SOURCE_TREE = Path(__file__).resolve().parents[3] / "spark_jetstream"


def test_workers_import_the_installed_connector(spark: SparkSession) -> None:
    (where,) = spark.sparkContext.parallelize([0], 1).map(
        # a lambda is pickled by value: the worker needs no test module to run it
        lambda _: str(__import__("spark_jetstream").__file__)
    ).collect()
    assert "site-packages" in where
    assert not Path(where).resolve().is_relative_to(SOURCE_TREE)
