"""`local_spark_session()`'s Python processes import the installed, compiled pyspark: a worker
(a task) and a data source's planner (its schema), in the suite's shared session. The test
process's own PYTHONPATH is left as it was."""

from __future__ import annotations

import os
import sys

from pyspark.cloudpickle import register_pickle_by_value
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from spark_jetstream.local import WORKER_SITE

# the probe's functions and class go to Spark's Python processes by value (this module is not
# importable there)
register_pickle_by_value(sys.modules[__name__])


def _where_pyspark_comes_from() -> str:
    import pyspark

    return "zip" if ".zip" in pyspark.__file__ else "installed"


class PlannerProbe(DataSource):
    """Its schema names where the planner process imported pyspark from."""

    @classmethod
    def name(cls) -> str:
        return "planner_probe"

    def schema(self) -> str:
        return f"{_where_pyspark_comes_from()} string"

    def reader(self, schema: StructType) -> DataSourceReader:
        raise NotImplementedError("only the schema is asked for")


def test_workers_and_planners_import_the_installed_pyspark(spark) -> None:  # type: ignore[no-untyped-def]
    workers = spark.sparkContext.parallelize(range(2), 2).map(lambda _: _where_pyspark_comes_from()).collect()
    assert workers == ["installed", "installed"]
    spark.dataSource.register(PlannerProbe)
    assert spark.read.format("planner_probe").load().schema.fieldNames() == ["installed"]


def test_the_test_process_keeps_its_own_pythonpath(spark) -> None:  # type: ignore[no-untyped-def]
    assert WORKER_SITE not in os.environ.get("PYTHONPATH", "").split(os.pathsep)
