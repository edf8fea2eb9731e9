"""Child program of the `latest` crash test (not collected by pytest).

One streaming query in its own SparkSession, with no `register` call (Spark
finds the data source itself, pyspark_jetstream): the jetstream source (stream S,
`startingOffsets=latest`, JetStream API under `api_prefix`) -> foreachBatch,
which writes each batch's sequences to `<out_dir>/batch-<id>.txt` (written
whole, then renamed: a batch run again after a kill replaces its file). With
mode `processing` it runs on a 100 ms processing-time trigger until killed;
with `available-now` it drains what is there and exits 0.

usage: python latest_pipeline.py <server url> <checkpoint> <stream> <api prefix> <out dir> <mode>
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    url, checkpoint, stream, api_prefix, out_dir, mode = argv
    from child_spark import child_conf

    from spark_jetstream.local import local_spark_session

    spark = local_spark_session("latest-pipeline", cores=2, conf=child_conf())  # a quick start-up
    spark.sparkContext.setLogLevel("ERROR")  # no register call: Spark finds the source itself
    out = Path(out_dir)

    def sink(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        seqs = [r.seq for r in df.select("seq").collect()]
        tmp = out / f".batch-{batch_id}.tmp"
        tmp.write_text("".join(f"{s}\n" for s in seqs))
        os.replace(tmp, out / f"batch-{batch_id}.txt")

    source = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", stream)
        .option("startingOffsets", "latest")
        .option("apiPrefix", api_prefix)
        .option("includeHeaders", "false")
        .load()
    )
    writer = source.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    if mode == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="100 milliseconds")
    query = writer.start()
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
