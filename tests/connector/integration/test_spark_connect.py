"""The connector from a Spark Connect client: batch and streaming, reads and writes.

A Spark Connect server (from the pip package, local master) runs the queries;
this process is only a Connect client (`SparkSession.builder.remote`), with no
JVM of its own. No `register` call: the Connect server's Spark finds the data
source itself (pyspark_jetstream, installed with the connector where the
server runs, like on executors of a cluster); `register(spark)` through the
Connect session leaves it in place. What differs from a classic session is in docs/deployment.md
(Spark Connect); the option errors below show that a bad option still reaches the client
as the connector's message.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from child_spark import java_options, jvm_environment, worker_site_path
from jvm_class_archive import class_archive
from sink_helpers import create_stream, publish_acked, read_stream

from jetstream_testing.process import ServerProcess, start_server
from jetstream_testing.spark_connect import ConnectServer

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.spark_matrix]


@pytest.fixture(scope="module")
def nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server("nats-server", tmp_path_factory.mktemp("store"))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # the Connect builder itself: the classic builder refuses a remote session while the
    # suite's shared classic session runs in this process (SESSION_ALREADY_EXIST)
    from pyspark.sql.connect.session import SparkSession

    # A Connect session sets SPARK_CONNECT_MODE_ENABLED in os.environ and leaves it there: every
    # later session of this process, and every child process, would try to be a Connect client.
    environ = dict(os.environ)
    with contextlib.ExitStack() as stack:
        # the server's Python processes import the installed pyspark, compiled, and its JVM maps
        # the class archive when there is one (child_spark.py)
        conf = {"spark.driver.extraJavaOptions": java_options(class_archive(train=False))}
        with jvm_environment(PYTHONPATH=worker_site_path()):
            server = stack.enter_context(ConnectServer(tmp_path_factory.mktemp("connect"), conf=conf))
        # what the classic builder would set: pyspark.sql.functions then build Connect columns
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        spark = SparkSession.builder.remote(server.remote).getOrCreate()
        try:
            assert spark.conf.get("spark.master", "").startswith("local")  # the server's, not ours
            yield spark
        finally:
            spark.stop()
            os.environ.clear()
            os.environ.update(environ)


def test_is_a_connect_session(remote: Any) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(remote, ConnectSession)


def test_batch_write_then_batch_read(remote: Any, nats: ServerProcess) -> None:
    create_stream(nats.url, "B", ["b.>"])
    rows = [(f"b.{i % 3}", f"v{i}") for i in range(50)]
    df = remote.createDataFrame(rows, "subject string, data string")
    df.write.format("jetstream").mode("append").option("servers", nats.url).save()
    got = remote.read.format("jetstream").option("servers", nats.url).option("stream", "B").load()
    out = sorted((r["subject"], bytes(r["data"]).decode(), r["seq"]) for r in got.collect())
    assert [(s, d) for s, d, _ in out] == sorted(rows)
    assert sorted(seq for _, _, seq in out) == list(range(1, 51))


def test_streaming_read_and_write_with_a_checkpoint(remote: Any, nats: ServerProcess, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    create_stream(nats.url, "SIN", ["sin.>"])
    create_stream(nats.url, "SOUT", ["sout.>"], duplicate_window=600 * 10**9)
    publish_acked(nats.url, [(f"sin.{i % 5}", f"m{i}".encode()) for i in range(300)])

    from spark_jetstream.spark_features import detect

    def run() -> None:  # AvailableNow: three micro-batches (one before Spark 4.2), then the query stops
        reader = remote.readStream.format("jetstream").option("servers", nats.url).option("stream", "SIN")
        if detect().read_limits:  # the client's pyspark is the server's here
            reader = reader.option("maxMessagesPerTrigger", "100")
        source = reader.load()
        out = source.select("stream", "seq", F.upper(F.col("data").cast("string")).alias("data"))
        query = (
            out.writeStream.format("jetstream")
            .option("servers", nats.url)
            .option("subject", "sout.copy")
            .option("msgIdMode", "source")
            .option("msgIdScope", "connect")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(240)
        assert not query.isActive and query.exception() is None

    run()
    msgs = read_stream(nats.url, "SOUT")
    assert sorted(m.msg_id for m in msgs) == sorted(f"connect:SIN:{s}:0" for s in range(1, 301))  # type: ignore[type-var]
    assert sorted(m.data for m in msgs) == sorted(f"M{i}".encode() for i in range(300))


def test_register_leaves_the_found_source_in_place(remote: Any, nats: ServerProcess) -> None:
    import spark_jetstream

    spark_jetstream.register(remote)  # Spark refuses to replace it (DATA_SOURCE_ALREADY_EXISTS): not an error
    create_stream(nats.url, "R", ["r.>"])
    publish_acked(nats.url, [("r.x", b"one")])
    got = remote.read.format("jetstream").option("servers", nats.url).option("stream", "R").load()
    assert [bytes(r["data"]) for r in got.collect()] == [b"one"]


def test_bad_option_reaches_the_client_as_the_connector_message(remote: Any, nats: ServerProcess) -> None:
    with pytest.raises(Exception, match="option stream is required"):
        remote.read.format("jetstream").option("servers", nats.url).load().collect()
