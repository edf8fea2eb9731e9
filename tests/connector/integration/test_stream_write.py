"""`df.writeStream.format("jetstream")` against both servers: ids per query and batch,
replayed batches deduplicated, errors at query start, jetstream -> jetstream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery
from sink_helpers import create_stream, read_stream, stream_info

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark


def write_json_files(folder: Path, start: int, count: int, per_file: int = 10) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f0 in range(start, start + count, per_file):
        lines = [json.dumps({"data": f"v{i}", "subject": f"sw.{i % 2}"}) for i in range(f0, min(f0 + per_file, start + count))]
        (folder / f"part-{f0:06d}.json").write_text("\n".join(lines) + "\n")


def run_available_now(spark: SparkSession, src: Path, checkpoint: Path, url: str, **options: str) -> StreamingQuery:
    df = spark.readStream.schema("data string, subject string").option("maxFilesPerTrigger", 2).json(str(src))
    query = (
        df.writeStream.format("jetstream")
        .option("servers", url)
        .option("checkpointLocation", str(checkpoint))
        .options(**options)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    return query


def test_streaming_write_ids_are_query_batch_partition_content(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    create_stream(server.url, "SW", ["sw.>"])
    write_json_files(tmp_path / "in", 0, 60)
    query = run_available_now(spark, tmp_path / "in", tmp_path / "ck", server.url, stream="SW")
    msgs = read_stream(server.url, "SW")
    assert sorted(m.data for m in msgs) == sorted(f"v{i}".encode() for i in range(60))
    assert all(m.subject == f"sw.{int(m.data[1:]) % 2}" for m in msgs)
    batches = {int(m.msg_id.split(":")[1]) for m in msgs if m.msg_id}
    assert all(m.msg_id and m.msg_id.startswith(f"{query.id}:") for m in msgs)
    assert batches == set(range(3))  # 6 files, 2 per trigger
    assert all(m.msg_id and m.msg_id.count(":") == 4 for m in msgs)  # q:batch:partition:digest:k
    assert len({m.msg_id for m in msgs}) == 60


def test_replayed_batch_is_deduplicated_and_restart_continues(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    create_stream(server.url, "RP", ["sw.>"])
    src, ck = tmp_path / "in", tmp_path / "ck"
    write_json_files(src, 0, 40)
    run_available_now(spark, src, ck, server.url, subject="sw.all")
    assert stream_info(server.url, "RP")["state"]["messages"] == 40
    # Forget that the last batch was committed: the restarted query runs it again, same ids.
    commits = sorted((ck / "commits").iterdir(), key=lambda p: p.name)
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()
    (ck / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    write_json_files(src, 40, 20)
    query = run_available_now(spark, src, ck, server.url, subject="sw.all")
    replayed = [p for p in query.recentProgress if p["batchId"] == int(last.name)]
    assert replayed and replayed[0]["numInputRows"] > 0  # the batch really ran again
    msgs = read_stream(server.url, "RP")
    assert sorted(m.data for m in msgs) == sorted(f"v{i}".encode() for i in range(60))


def test_a_write_inside_foreach_batch_repeats_its_ids_when_the_batch_is_replayed(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    create_stream(server.url, "FB", ["fb"])
    src, ck = tmp_path / "in", tmp_path / "ck"
    write_json_files(src, 0, 40)
    url = server.url

    def write_batch(df: DataFrame, batch_id: int) -> None:
        # a shuffle and a new row order on every attempt; no msg_id, no source coordinates
        shuffled = df.repartition(3, "data").sortWithinPartitions(F.rand()).select("data")
        shuffled.write.format("jetstream").mode("append").option("servers", url).option("subject", "fb").save()

    def run() -> StreamingQuery:
        df = spark.readStream.schema("data string, subject string").option("maxFilesPerTrigger", 2).json(str(src))
        query = (
            df.writeStream.foreachBatch(write_batch)
            .option("checkpointLocation", str(ck))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
        return query

    first = run()
    assert stream_info(server.url, "FB")["state"]["messages"] == 40
    commits = sorted((ck / "commits").iterdir(), key=lambda p: p.name)
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()
    (ck / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    write_json_files(src, 40, 20)
    query = run()
    replayed = [p for p in query.recentProgress if p["batchId"] == int(last.name)]
    assert replayed and replayed[0]["numInputRows"] > 0  # the batch really ran again
    msgs = read_stream(server.url, "FB")
    assert sorted(m.data for m in msgs) == sorted(f"v{i}".encode() for i in range(60))
    assert all(m.msg_id and m.msg_id.startswith(f"{first.id}:") for m in msgs)  # query and batch ids


def test_bad_option_fails_the_query_at_start(spark: SparkSession, server: ServerProcess, tmp_path: Path) -> None:
    create_stream(server.url, "ST", ["st"])
    write_json_files(tmp_path / "in", 0, 10)
    df = spark.readStream.schema("data string, subject string").json(str(tmp_path / "in"))
    for options, message in (
        ({"subject": "st", "stream": "NOPE"}, "(?i)expected stream does not match"),
        ({"subject": "st", "bogus": "1"}, "unknown option.*bogus"),
        ({"subject": "st", "msgIdColumns": "nope"}, "msgIdColumns names column 'nope'"),
    ):
        with pytest.raises(Exception, match=message):
            query = (
                df.writeStream.format("jetstream")
                .option("servers", server.url)
                .option("checkpointLocation", str(tmp_path / f"ck-{len(message)}"))
                .options(**options)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination(60)
            exc = query.exception()
            if exc is not None:
                raise exc
    assert stream_info(server.url, "ST")["state"]["messages"] == 0


def test_jetstream_to_jetstream_keeps_every_row_of_a_fan_out(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F
    from sink_helpers import connect

    create_stream(server.url, "IN", ["in.>"])
    create_stream(server.url, "OUT", ["out.>"])
    with connect(server.url) as conn:
        for i in range(30):
            conn.request(f"in.{i % 3}", f"m{i}".encode())
    df = (
        spark.readStream.format("jetstream")
        .option("servers", server.url)
        .option("stream", "IN")
        .load()
        .withColumn("part", F.explode(F.array(F.lit("a"), F.lit("b"))))
        .select("stream", "seq", F.concat(F.col("data").cast("string"), F.lit("-"), F.col("part")).alias("data"))
    )

    def run(checkpoint: str) -> None:
        query = (
            df.writeStream.format("jetstream")
            .option("servers", server.url)
            .option("subject", "out.copy")
            .option("msgIdMode", "source")
            .option("msgIdScope", "fan")
            .option("checkpointLocation", str(tmp_path / checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()

    run("ck")
    msgs = read_stream(server.url, "OUT")
    assert sorted(m.data for m in msgs) == sorted(f"m{i}-{p}".encode() for i in range(30) for p in "ab")
    assert {m.msg_id for m in msgs} == {f"fan:IN:{s}:{k}" for s in range(1, 31) for k in (0, 1)}
    run("fresh-checkpoint")  # a re-run from scratch is deduplicated: source ids name no query
    assert stream_info(server.url, "OUT")["state"]["messages"] == 60


def test_source_rows_written_as_they_are_keep_subject_data_and_headers(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    from sink_helpers import connect

    create_stream(server.url, "A", ["a.>"], allow_rollup_hdrs=True)
    create_stream(server.url, "B", ["b.>"], allow_rollup_hdrs=True)
    with connect(server.url) as conn:
        for i in range(10):
            hdrs = (
                f"NATS/1.0\r\nNats-Msg-Id: src-{i}\r\nX-Trace: t{i}\r\nX-Multi: 1\r\nX-Multi: 2\r\n"
                "Nats-Rollup: sub\r\n\r\n"  # the source allows rollups; copied, it would wipe b.copy
            ).encode()
            conn.request(f"a.{i}", f"p{i}".encode(), headers=hdrs)
    source = spark.readStream.format("jetstream").option("servers", server.url).option("stream", "A").load()
    query = (
        source.writeStream.format("jetstream")
        .option("servers", server.url)
        .option("subject", "b.copy")
        .option("stream", "B")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    msgs = read_stream(server.url, "B")
    assert sorted(m.data for m in msgs) == sorted(f"p{i}".encode() for i in range(10))
    for m in msgs:
        i = int(m.data[1:])
        assert m.subject == "b.copy"
        # the sink's id replaces the source's Nats-Msg-Id (one header, not two)
        assert len(m.headers["Nats-Msg-Id"]) == 1 and m.headers["Nats-Msg-Id"] != [f"src-{i}"]
        assert "Nats-Rollup" not in m.headers
        assert m.headers["X-Trace"] == [f"t{i}"] and m.headers["X-Multi"] == ["1", "2"]


def test_streaming_binary_data_headers_and_msg_id_columns(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    create_stream(server.url, "HM", ["hm.>"])
    src = tmp_path / "in"
    src.mkdir()
    rows = [{"data": f"d{i}", "subject": f"hm.{i}", "headers": {"X-I": str(i)}, "msg_id": f"id-{i}"} for i in range(12)]
    (src / "rows.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    df = (
        spark.readStream.schema("data string, subject string, headers map<string,string>, msg_id string")
        .json(str(src))
        .select(F.col("data").cast("binary").alias("data"), "subject", "headers", "msg_id")
    )
    for _ in range(2):  # a second run on a fresh checkpoint re-publishes the same msg_ids
        query = (
            df.writeStream.format("jetstream")
            .option("servers", server.url)
            .option("checkpointLocation", str(tmp_path / f"ck{_}"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
    msgs = read_stream(server.url, "HM")
    assert sorted((m.msg_id, m.subject, m.data, m.headers["X-I"][0]) for m in msgs) == sorted(
        (f"id-{i}", f"hm.{i}", f"d{i}".encode(), str(i)) for i in range(12)
    )
