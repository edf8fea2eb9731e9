"""The connector on the running Spark, whatever its version (4.0 to 4.3): the quick start with no set-up call.

`make test-spark-versions` runs the tests marked `spark_matrix` (these, the
`latest` start, the SIGKILL exactly-once tests and Spark Connect) in one
virtual environment per pyspark release. Here the session is a new one of
the suite's JVM that never called `register`: `format("jetstream")` is
Spark's own registration of `pyspark_jetstream`. On 4.0/4.1 the stream reader
is the legacy one (one `latestOffset()` per AvailableNow run) and on 4.0 the
stream sink the row-based writer; the same tests hold on every version.

The tests without the marker drive the legacy paths on a newer Spark (a
data source subclass that claims the features of 4.0), so `make test` keeps
them covered between matrix runs.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sink_helpers import create_stream, publish_acked, read_stream

from jetstream_testing.process import ServerProcess
from spark_jetstream.datasource import JetStreamDataSource
from spark_jetstream.spark_features import SparkFeatures, detect

pytestmark = pytest.mark.spark

SPARK_40 = SparkFeatures("4.0.5", read_limits=False, stream_arrow_writer=False, filter_pushdown=False)


@pytest.fixture(scope="module")
def fresh(spark: Any) -> Any:
    """A new session: the shared one's JVM, no `register` call in it."""
    return spark.newSession()


def names() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:6].upper()
    return f"IN{tag}", f"OUT{tag}"


def copy_query(session: Any, fmt: str, url: str, src: str, dst: str, checkpoint: Path, **read: str) -> Any:
    """IN -> upper-cased payload -> OUT (ids from the source coordinates), not started."""
    from pyspark.sql import functions as F

    reader = session.readStream.format(fmt).option("servers", url).option("stream", src)
    for key, value in read.items():
        reader = reader.option(key, value)
    out = reader.load().select("stream", "seq", F.upper(F.col("data").cast("string")).alias("data"))
    return (
        out.writeStream.format(fmt).option("servers", url).option("subject", f"{dst.lower()}.copy")
        .option("msgIdMode", "source").option("msgIdScope", "v").option("checkpointLocation", str(checkpoint))
    )


def expect_copies(url: str, src: str, dst: str, seqs: range) -> None:
    msgs = read_stream(url, dst)
    assert sorted(str(m.msg_id) for m in msgs) == sorted(f"v:{src}:{s}:0" for s in seqs)
    assert len(msgs) == len(seqs)


def make_streams(url: str, n: int) -> tuple[str, str]:
    src, dst = names()
    create_stream(url, src, [f"{src.lower()}.>"])
    create_stream(url, dst, [f"{dst.lower()}.>"], duplicate_window=600 * 10**9)
    publish_acked(url, [(f"{src.lower()}.{i % 3}", f"m{i}".encode()) for i in range(n)])
    return src, dst


@pytest.mark.spark_matrix
def test_batch_read_and_write_with_no_register_call(fresh: Any, server: ServerProcess) -> None:
    src, dst = make_streams(server.url, 30)
    df = fresh.read.format("jetstream").option("servers", server.url).option("stream", src).load()
    assert sorted(r.seq for r in df.select("seq").collect()) == list(range(1, 31))
    (df.selectExpr(f"'{dst.lower()}.copy' AS subject", "data", "stream", "seq")
       .write.format("jetstream").option("servers", server.url).option("msgIdMode", "source")
       .option("msgIdScope", "v").mode("append").save())
    expect_copies(server.url, src, dst, range(1, 31))


@pytest.mark.spark_matrix
def test_available_now_reads_everything_then_continues(fresh: Any, server: ServerProcess, tmp_path: Path) -> None:
    """The defect on 4.1: AvailableNow ended after a batch that only recorded the start."""
    src, dst = make_streams(server.url, 40)
    copy_query(fresh, "jetstream", server.url, src, dst, tmp_path / "c").trigger(availableNow=True).start().awaitTermination(240)
    expect_copies(server.url, src, dst, range(1, 41))
    publish_acked(server.url, [(f"{src.lower()}.x", b"late") for _ in range(5)])
    query = copy_query(fresh, "jetstream", server.url, src, dst, tmp_path / "c").trigger(availableNow=True).start()
    query.awaitTermination(240)
    assert query.exception() is None
    expect_copies(server.url, src, dst, range(1, 46))


@pytest.mark.spark_matrix
def test_processing_time_trigger_reads_what_arrives(fresh: Any, server: ServerProcess, tmp_path: Path) -> None:
    src, dst = make_streams(server.url, 20)
    query = copy_query(fresh, "jetstream", server.url, src, dst, tmp_path / "c").trigger(
        processingTime="100 milliseconds").start()
    try:
        query.processAllAvailable()
        publish_acked(server.url, [(f"{src.lower()}.x", b"more") for _ in range(7)])
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    expect_copies(server.url, src, dst, range(1, 28))


@pytest.mark.spark_matrix
def test_latest_start_with_available_now_is_recorded_before_anything_is_read(
    fresh: Any, server: ServerProcess, tmp_path: Path
) -> None:
    src, dst = make_streams(server.url, 10)
    run = copy_query(fresh, "jetstream", server.url, src, dst, tmp_path / "c", startingOffsets="latest")
    run.trigger(availableNow=True).start().awaitTermination(240)
    assert read_stream(server.url, dst) == []  # started at the end: nothing read
    publish_acked(server.url, [(f"{src.lower()}.x", b"after") for _ in range(4)])
    run = copy_query(fresh, "jetstream", server.url, src, dst, tmp_path / "c", startingOffsets="latest")
    run.trigger(availableNow=True).start().awaitTermination(240)
    expect_copies(server.url, src, dst, range(11, 15))  # exactly what came after the start


@pytest.mark.spark_matrix
def test_register_leaves_the_found_source_in_place(fresh: Any, server: ServerProcess) -> None:
    import spark_jetstream

    spark_jetstream.register(fresh)  # Spark refuses to replace what it found: not an error
    spark_jetstream.register(fresh)
    src, _ = make_streams(server.url, 3)
    df = fresh.read.format("jetstream").option("servers", server.url).option("stream", src).load()
    assert df.count() == 3


@pytest.mark.spark_matrix
def test_options_a_spark_cannot_honour_are_refused_naming_it(fresh: Any, server: ServerProcess) -> None:
    src, _ = make_streams(server.url, 1)
    df = (fresh.readStream.format("jetstream").option("servers", server.url).option("stream", src)
          .option("maxMessagesPerTrigger", "5").load())
    batch = (fresh.read.format("jetstream").option("servers", server.url).option("stream", src)
             .option("filterPushdown", "true"))
    if detect().read_limits:
        assert df.isStreaming
    else:
        with pytest.raises(Exception, match=r"option maxMessagesPerTrigger needs Spark 4\.2 or later"):
            df.writeStream.format("noop").start().awaitTermination(60)
    if not detect().filter_pushdown:
        with pytest.raises(Exception, match=r"option filterPushdown needs Spark 4\.1 or later"):
            batch.load().collect()


# -- the legacy paths on a newer Spark (make test) --------------------------------------


def source_claiming(features: SparkFeatures, name: str) -> type[JetStreamDataSource]:
    """JetStreamDataSource with `features`, under `name`; pickled by value (its qualname does
    not resolve), so Spark's Python workers need no test module."""
    attrs = {"features": features, "name": classmethod(lambda cls: name), "__qualname__": f"On{name}"}
    return type("JetStreamDataSource", (JetStreamDataSource,), attrs)


@pytest.fixture(scope="module")
def as_spark_40(spark: Any) -> str:
    spark.dataSource.register(source_claiming(SPARK_40, "jetstream_as_4_0"))
    return "jetstream_as_4_0"


def test_spark_40_paths_read_and_write_exactly_once(
    spark: Any, as_spark_40: str, server: ServerProcess, tmp_path: Path
) -> None:
    """The legacy stream reader (Spark's AvailableNow wrapper) and the row-based stream writer."""
    src, dst = make_streams(server.url, 25)
    for _ in range(2):  # the second run reads nothing new and publishes nothing again
        copy_query(spark, as_spark_40, server.url, src, dst, tmp_path / "c").trigger(
            availableNow=True).start().awaitTermination(240)
        expect_copies(server.url, src, dst, range(1, 26))
    publish_acked(server.url, [(f"{src.lower()}.x", b"late") for _ in range(5)])
    query = copy_query(spark, as_spark_40, server.url, src, dst, tmp_path / "c").trigger(
        processingTime="100 milliseconds").start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    expect_copies(server.url, src, dst, range(1, 31))


def test_the_row_writer_publishes_what_the_arrow_writer_does(spark: Any) -> None:
    """Same rows, same record batches for the sink task, hence the same subjects, headers and ids."""
    from spark_jetstream.write.schema import validate_write_schema
    from spark_jetstream.write.stream_sink import rows_to_batches

    df = spark.createDataFrame(
        [("a.1", b"x", {"k": ["1", "2"]}, "S", 7, 1.5), ("a.2", None, None, "S", 8, None)],
        "subject string, data binary, headers map<string,array<string>>, stream string, seq long, w double",
    )
    columns = validate_write_schema(df.schema, None, "content", ("w", "seq"))
    names = list(dict.fromkeys([*columns.used(), *columns.id_columns]))
    arrow = df.select(*names).toArrow()
    import pyarrow as pa

    from_rows = pa.Table.from_batches(list(rows_to_batches(iter(df.collect()), df.schema, columns)))
    assert from_rows.equals(arrow)  # the same values and Arrow types, so the same messages and ids
