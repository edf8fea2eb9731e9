"""`df.write.format("jetstream")` against both servers: columns, ids, dedup, errors."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from sink_helpers import create_stream, read_stream, stream_info

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.spark


def write(df: DataFrame, url: str, **options: str) -> None:
    df.write.format("jetstream").mode("append").option("servers", url).options(**options).save()


def assert_nothing_published(url: str, stream: str) -> None:
    assert stream_info(url, stream)["state"]["messages"] == 0


# data kind, subject from (column|option), headers kind, with msg_id: every pair of values
COMBOS = [
    ("binary", "column", None, False),
    ("string", "option", None, True),
    ("binary", "option", "single", False),
    ("string", "column", "multi", False),
    ("binary", "column", "multi", True),
    ("string", "option", "single", True),
    ("string", "column", "single", False),
    ("binary", "option", "multi", True),
]


@pytest.mark.parametrize(("data_kind", "subject_from", "headers_kind", "with_id"), COMBOS)
def test_column_combinations(
    spark: SparkSession,
    server: ServerProcess,
    data_kind: str,
    subject_from: str,
    headers_kind: str | None,
    with_id: bool,
) -> None:
    create_stream(server.url, "OUT", ["out.>"])
    n = 20
    rows: list[dict[str, Any]] = []
    for i in range(n):
        row: dict[str, Any] = {"data": f"payload-{i}" if data_kind == "string" else f"payload-{i}".encode()}
        row["subject"] = f"out.col.{i % 3}"
        if headers_kind == "single":
            row["headers"] = {"X-Row": str(i), "X-Fixed": "f"}
        elif headers_kind == "multi":
            row["headers"] = {"X-Row": [str(i), "again"], "X-None": None}
        if with_id:
            row["msg_id"] = f"mine-{i}"
        rows.append(row)
    types = {
        "data": "string" if data_kind == "string" else "binary",
        "subject": "string",
        "headers": "map<string,string>" if headers_kind == "single" else "map<string,array<string>>",
        "msg_id": "string",
    }
    names = [c for c in ("data", "subject", "headers", "msg_id") if c in rows[0]]
    df = spark.createDataFrame(
        [tuple(r[c] for c in names) for r in rows], ", ".join(f"{c} {types[c]}" for c in names)
    ).repartition(2)
    options = {"subject": "out.opt"} if subject_from == "option" else {}
    write(df, server.url, **options)

    msgs = read_stream(server.url, "OUT")
    assert len(msgs) == n
    by_data = {m.data: m for m in msgs}
    assert set(by_data) == {f"payload-{i}".encode() for i in range(n)}
    for i in range(n):
        m = by_data[f"payload-{i}".encode()]
        assert m.subject == ("out.opt" if subject_from == "option" else f"out.col.{i % 3}")
        if with_id:
            assert m.msg_id == f"mine-{i}"
        else:
            assert m.msg_id is not None and m.msg_id.startswith("w:")  # w:<partition>:<digest>:<k>
            assert m.msg_id.count(":") == 3
        if headers_kind == "single":
            assert m.headers["X-Row"] == [str(i)] and m.headers["X-Fixed"] == ["f"]
        elif headers_kind == "multi":
            assert m.headers["X-Row"] == [str(i), "again"] and "X-None" not in m.headers
    assert len({m.msg_id for m in msgs}) == n


def test_rewriting_the_same_ids_is_deduplicated(spark: SparkSession, server: ServerProcess) -> None:
    create_stream(server.url, "DUP", ["dup"])
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(50)], "msg_id string, data string")
    write(df, server.url, subject="dup")
    write(df, server.url, subject="dup")
    assert stream_info(server.url, "DUP")["state"]["messages"] == 50


def test_source_ids_are_explicit_scoped_and_survive_a_rerun(spark: SparkSession, server: ServerProcess) -> None:
    create_stream(server.url, "SRC2", ["dst.>"])
    # two output rows per source message (an explode): both kept, and a rerun adds nothing
    df = spark.createDataFrame(
        [("SRC", seq, f"{seq}-{part}") for seq in range(1, 31) for part in ("a", "b")],
        "stream string, seq long, data string",
    ).coalesce(1)
    write(df, server.url, subject="dst.x", msgIdMode="source", msgIdScope="pipeA")
    write(df, server.url, subject="dst.x", msgIdMode="source", msgIdScope="pipeA")
    msgs = read_stream(server.url, "SRC2")
    assert len(msgs) == 60
    assert {m.msg_id for m in msgs} == {f"pipeA:SRC:{s}:{k}" for s in range(1, 31) for k in (0, 1)}
    # another pipeline from the same source into the same stream keeps its own output
    other = df.selectExpr("stream", "seq", "concat('other-', data) AS data")
    write(other, server.url, subject="dst.x", msgIdMode="source", msgIdScope="pipeB")
    assert stream_info(server.url, "SRC2")["state"]["messages"] == 120
    # columns that merely look like source coordinates switch nothing on: content ids
    write(df.selectExpr("stream", "seq", "concat('third-', data) AS data"), server.url, subject="dst.x")
    assert stream_info(server.url, "SRC2")["state"]["messages"] == 180


def test_content_ids_rerun_is_deduplicated_and_a_scope_keeps_writes_apart(
    spark: SparkSession, server: ServerProcess
) -> None:
    create_stream(server.url, "CI", ["ci"], duplicate_window=3600 * 10**9)
    # identical rows are kept (occurrence count), in whatever partition and order they come
    rows = [(f"v{i % 25}",) for i in range(100)]
    write(spark.createDataFrame(rows, "data string").repartition(3, "data"), server.url, subject="ci")
    assert stream_info(server.url, "CI")["state"]["messages"] == 100
    shuffled = spark.createDataFrame(rows[::-1], "data string").repartition(3, "data").sortWithinPartitions("data")
    write(shuffled, server.url, subject="ci")  # a rerun of the same write: nothing new
    assert stream_info(server.url, "CI")["state"]["messages"] == 100
    write(shuffled, server.url, subject="ci", msgIdScope="second")  # a deliberate second write
    assert stream_info(server.url, "CI")["state"]["messages"] == 200


def test_msg_id_columns_identify_rows_whatever_their_partition(spark: SparkSession, server: ServerProcess) -> None:
    create_stream(server.url, "MC", ["mc"], duplicate_window=3600 * 10**9)
    df = spark.createDataFrame([(i, f"order {i}") for i in range(60)], "order_id int, data string")
    write(df.repartition(2), server.url, subject="mc", msgIdColumns="order_id")
    write(df.repartition(5), server.url, subject="mc", msgIdColumns="order_id")  # other partitions
    msgs = read_stream(server.url, "MC")
    assert sorted(m.data for m in msgs) == sorted(f"order {i}".encode() for i in range(60))
    assert all(m.msg_id and m.msg_id.startswith("w:") and m.msg_id.count(":") == 2 for m in msgs)


def test_stream_option_sends_expected_stream(spark: SparkSession, server: ServerProcess) -> None:
    create_stream(server.url, "EXP", ["exp.>"])
    create_stream(server.url, "OTHER", ["other.>"])
    ok = spark.createDataFrame([("exp.a", "1"), ("exp.b", "2")], "subject string, data string")
    write(ok, server.url, stream="EXP")
    assert stream_info(server.url, "EXP")["state"]["messages"] == 2
    stray = spark.createDataFrame([("other.a", "3")], "subject string, data string")
    with pytest.raises(Exception, match="(?i)expected stream does not match.*10060"):
        write(stray, server.url, stream="EXP")
    assert_nothing_published(server.url, "OTHER")


@pytest.mark.parametrize(
    ("schema", "row", "options", "message"),
    [
        ("value binary", (b"x",), {"subject": "bad.a"}, "needs a column 'data'"),
        ("data int", (1,), {"subject": "bad.a"}, "column 'data' has type int"),
        ("data string, headers string", ("x", "h"), {"subject": "bad.a"}, "column 'headers' has type string"),
        ("data string", ("x",), {"subject": "bad.a", "maxInflite": "3"}, "unknown option.*maxinflite"),
        ("data string", ("x",), {"subject": "bad.a", "msgIdMode": "source"}, "msgIdMode=source needs msgIdScope"),
        ("data string", ("x",), {"subject": "bad.a", "msgIdMode": "source", "msgIdScope": "p"}, "needs the source coordinate columns"),
        ("data string", ("x",), {"subject": "bad.a", "msgIdColumns": "key"}, "msgIdColumns names column 'key'"),
        # found by the publish itself (the driver asks the server nothing before the tasks run)
        ("data string", ("x",), {"subject": "bad.a", "stream": "MISSING"}, "(?i)expected stream does not match"),
        ("data string", ("x",), {"subject": "nothing.here"}, "no stream captures subject 'nothing.here'"),
        ("data string", ("x",), {"subject": "elsewhere.a", "stream": "BAD"}, "(?i)expected stream does not match"),
        ("data string", ("x",), {}, "no subject"),
    ],
)
def test_bad_columns_options_and_targets_fail_before_publishing(
    spark: SparkSession,
    server: ServerProcess,
    schema: str,
    row: tuple[Any, ...],
    options: dict[str, str],
    message: str,
) -> None:
    create_stream(server.url, "BAD", ["bad.>"])
    create_stream(server.url, "ELSE", ["elsewhere.>"])
    with pytest.raises(Exception, match=message):
        write(spark.createDataFrame([row], schema), server.url, **options)
    assert_nothing_published(server.url, "BAD")
    assert_nothing_published(server.url, "ELSE")


def test_overwrite_mode_is_refused(spark: SparkSession, server: ServerProcess) -> None:
    create_stream(server.url, "OW", ["ow"])
    df = spark.createDataFrame([("x",)], "data string")
    with pytest.raises(Exception, match="mode overwrite is not supported"):
        df.write.format("jetstream").mode("overwrite").option("servers", server.url).option("subject", "ow").save()


def test_null_subject_in_a_row_fails_the_task_naming_the_column(spark: SparkSession, server: ServerProcess) -> None:
    create_stream(server.url, "NS", ["ns.>"])
    df = spark.createDataFrame([("ns.a", "1"), (None, "2")], "subject string, data string").coalesce(1)
    with pytest.raises(Exception, match="column 'subject' is null in row 1"):
        write(df, server.url)


def test_dedup_window_of_streams_from_the_subject_column_is_checked_at_commit(
    spark: SparkSession, server: ServerProcess
) -> None:
    # no subject or stream option: the streams are the ones the pub acks named
    create_stream(server.url, "SHORT", ["short.>"], duplicate_window=5 * 10**9)
    create_stream(server.url, "LONGW", ["longw.>"], duplicate_window=3600 * 10**9)
    df = spark.createDataFrame([("short.a", "x"), ("longw.a", "y")], "subject string, data string")
    with pytest.raises(Exception, match="stream 'SHORT' has duplicate_window 5s, shorter than dedupWindowCheck=10m"):
        write(df, server.url, dedupWindowCheckMode="fail")
    assert stream_info(server.url, "SHORT")["state"]["messages"] == 1  # published, then refused
    write(df, server.url, msgIdScope="2")  # warn mode (the default) writes
    write(df, server.url, msgIdScope="3", dedupWindowCheck="1s", dedupWindowCheckMode="fail")
    assert stream_info(server.url, "SHORT")["state"]["messages"] == 3


def test_publish_instructions_in_the_headers_column_are_dropped(spark: SparkSession, server: ServerProcess) -> None:
    # rows read from a stream carry their original publisher's Nats-Expected-* and Nats-Msg-Id,
    # and server directives: a copied Nats-Rollup would wipe the subject, Nats-TTL fail the task
    create_stream(server.url, "COPY", ["copy"])
    headers = {
        "Nats-Expected-Stream": ["ORIGINAL"],
        "Nats-Expected-Last-Sequence": ["999"],
        "Nats-Msg-Id": ["original-id"],
        "Nats-Rollup": ["sub"],
        "Nats-TTL": ["1s"],
        "X-Keep": ["yes"],
    }
    df = spark.createDataFrame([("a", headers, "id-1")], "data string, headers map<string,array<string>>, msg_id string")
    write(df, server.url, subject="copy")
    (msg,) = read_stream(server.url, "COPY")
    assert msg.headers == {"Nats-Msg-Id": ["id-1"], "X-Keep": ["yes"]}
