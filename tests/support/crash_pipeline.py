"""Child program of the exactly-once crash test (not collected by pytest).

Runs one streaming query in its own SparkSession, with no `register` call (Spark
finds the data source itself: pyspark_jetstream): the jetstream source
(stream IN) -> a deterministic transform -> the jetstream sink (subject
`out.copy`), with a checkpoint, under `Trigger.AvailableNow`. The parent kills
this whole process group with SIGKILL and starts it again on the same
checkpoint; exit code 0 means every available message was processed.

Variants:
- `narrow`: upper-case payload, tagged, keeping the source coordinates;
  small micro-batches (Spark 4.2+; before, the run is one micro-batch); ids `msgIdMode=source` scoped by `msgIdScope=crash`.
- `shuffle`: no source coordinates in the output; a hash repartition on the
  payload, then each partition's rows in a random order (as an async
  enrichment emits rows as its calls complete: a replay after a restart sees
  another order), written by a `df.write` inside `foreachBatch`; 100k-message
  micro-batches; content ids (the default) scoped by the query and batch ids
  that the `foreachBatch` tasks see.

usage: python crash_pipeline.py <variant> <server url> <checkpoint dir> <in stream> <out subject> [key=value ...]

Optional `key=value` settings (the cluster tests): `durable=<name>` mirrors the
commits into that durable consumer; `consumer=<name>` reads through that
existing pull consumer (option consumer) and writes content ids (the default),
not source ids, so that a message read into two micro-batches would show twice; `max=<n>` sets maxMessagesPerTrigger;
`conf.<spark key>=<value>` sets a Spark conf; `submit=1` when run by
spark-submit: the session is spark-submit's (master, --py-files, Python), not a
local one.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    variant, url, checkpoint, in_stream, out_subject, *extra = argv
    settings = dict(arg.split("=", 1) for arg in extra)
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from spark_jetstream.local import local_spark_session
    from spark_jetstream.spark_features import detect

    if settings.get("submit") == "1":
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("crash-pipeline").getOrCreate()
    else:
        from child_spark import child_conf  # this short-lived driver starts several times per test

        conf = child_conf()
        conf.update({k[len("conf.") :]: v for k, v in settings.items() if k.startswith("conf.")})
        spark = local_spark_session("crash-pipeline", cores=2, conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    # no register call: Spark finds the source itself (pyspark_jetstream)
    reader = spark.readStream.format("jetstream").option("servers", url).option("stream", in_stream)
    if detect().read_limits:  # before Spark 4.2 an AvailableNow run is one micro-batch
        per_trigger = settings.get("max", "250" if variant == "narrow" else "100000")
        reader = reader.option("maxMessagesPerTrigger", per_trigger)
    if "durable" in settings:
        reader = reader.option("durable", settings["durable"])
    if "consumer" in settings:
        reader = reader.option("consumer", settings["consumer"])
    source = reader.load()
    sink_options = {
        "servers": url,
        "subject": out_subject,
        "dedupWindowCheck": "5m",
        "dedupWindowCheckMode": "fail",
        "checkpointLocation": checkpoint,
    }
    if variant == "narrow":
        out = source.select(
            "stream",
            "seq",
            F.concat(F.lit("done:"), F.upper(F.col("data").cast("string"))).alias("data"),
        )
        if "consumer" not in settings:
            sink_options |= {"msgIdMode": "source", "msgIdScope": "crash"}
        writer = out.writeStream.format("jetstream").options(**sink_options)
    elif variant == "shuffle":
        text = source.select(F.col("data").cast("string").alias("text"))
        del sink_options["checkpointLocation"]

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            # rand() takes a new seed each time it is planned: every attempt emits each
            # partition's rows in another order (streaming refuses sorts, and PySpark's
            # mapInArrow needs pandas: hence foreachBatch, whose df.write must be stable too)
            (
                batch.repartition(4, "text")
                .sortWithinPartitions(F.rand())
                .select(F.concat(F.lit("done:"), F.upper("text")).alias("data"))
                .write.format("jetstream")
                .mode("append")
                .options(**sink_options)
                .save()
            )

        writer = text.writeStream.foreachBatch(write_batch).option("checkpointLocation", checkpoint)
    else:
        raise SystemExit(f"unknown variant {variant!r}")
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
