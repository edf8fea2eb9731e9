"""Where Spark finds the `jetstream` data source by itself: no set-up call in any session.

Spark 4.0 and later register, in every session, the `DefaultSource` of each
installed module named `pyspark_<something>` (pyspark's
`sql/worker/lookup_data_sources.py`, run once per Spark driver or Spark
Connect server, on its Python). This module is that for the connector:
installed with `spark-jetstream`, it makes `spark.read.format("jetstream")`,
`readStream`, `write` and `writeStream` work without
`spark_jetstream.register(spark)`, classic and Spark Connect (the connector
installed where the Connect server runs). Spark refuses to register another
data source under a name its lookup found, so `register(spark)` then leaves
this one in place (spark_jetstream/__init__.py).
"""

from spark_jetstream.datasource import JetStreamDataSource as DefaultSource

__all__ = ["DefaultSource"]
