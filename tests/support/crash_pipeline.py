"""Child program of the exactly-once crash test (not collected by pytest).

Runs one streaming query in its own SparkSession: the jetstream source
(stream IN) -> a deterministic transform (upper-case payload, tagged) -> the
jetstream sink (subject `out.copy`), with a checkpoint, under
`Trigger.AvailableNow` and small micro-batches. The parent kills this whole
process group with SIGKILL at random points and starts it again on the same
checkpoint; exit code 0 means every available message was processed.

usage: python tests/crash_pipeline.py <server url> <checkpoint dir> <in stream> <out subject> [key=value ...]

Optional `key=value` settings (the cluster tests): `durable=<name>` mirrors the
commits into that durable consumer; `max=<n>` sets maxMessagesPerTrigger (250); `conf.<spark key>=<value>` sets a Spark conf
; `submit=1` when run by spark-submit: the session is
spark-submit's (master, --py-files, Python), not a local one.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    url, checkpoint, in_stream, out_subject, *extra = argv
    settings = dict(arg.split("=", 1) for arg in extra)
    from pyspark.sql import functions as F

    import spark_jetstream
    from spark_jetstream.local import local_spark_session

    # C1-only JIT and serial GC: this short-lived JVM starts several times per test
    fast_start = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    fast_start.update({k[len("conf.") :]: v for k, v in settings.items() if k.startswith("conf.")})
    if settings.get("submit") == "1":
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("crash-pipeline").getOrCreate()
    else:
        spark = local_spark_session("crash-pipeline", cores=2, conf=fast_start)
    spark.sparkContext.setLogLevel("ERROR")
    spark_jetstream.register(spark)
    reader = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", in_stream)
        .option("maxMessagesPerTrigger", settings.get("max", "250"))
    )
    if "durable" in settings:
        reader = reader.option("durable", settings["durable"])
    source = reader.load()
    out = source.select(
        "stream",
        "seq",
        F.concat(F.lit("done:"), F.upper(F.col("data").cast("string"))).alias("data"),
    )
    query = (
        out.writeStream.format("jetstream")
        .option("servers", url)
        .option("subject", out_subject)
        .option("dedupWindowCheck", "5m")
        .option("dedupWindowCheckMode", "fail")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
