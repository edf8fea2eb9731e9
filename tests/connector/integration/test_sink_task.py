"""One sink task without Spark: Arrow batches in, stored messages out (both servers)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from sink_helpers import create_stream, read_stream, stream_info

from jetstream_testing.process import ServerProcess
from spark_jetstream.options import WriteOptions
from spark_jetstream.write.msg_ids import content_digest
from spark_jetstream.write.schema import WriteColumns
from spark_jetstream.write.sink_task import RowValueError, publish_batches

MULTI = pa.map_(pa.string(), pa.list_(pa.string()))
CRLF = b"\r\n"


def batch(**columns: pa.Array) -> pa.RecordBatch:
    return pa.record_batch(list(columns.values()), names=list(columns))


def test_columns_to_messages_across_batches(server: ServerProcess) -> None:
    create_stream(server.url, "T", ["t.>"])
    opts = WriteOptions.from_options({"servers": server.url, "stream": "T", "maxInFlight": "4"})
    cols = WriteColumns(data="data", data_is_string=True, subject="subject", headers="headers", headers_multi=True)
    b1 = batch(
        data=pa.array(["a", None, "c"]),
        subject=pa.array(["t.1", "t.2", "t.1"]),
        headers=pa.array([[("H", ["1", "2"])], None, [("Nats-Expected-Last-Sequence", ["5"])]], MULTI),
    )
    b2 = batch(data=pa.array(["d"]), subject=pa.array(["t.9"]), headers=pa.array([[("H", [None])]], MULTI))
    msg = publish_batches(opts, cols, iter([b1, b2]), "w", 7)
    assert (msg.partition_id, msg.rows, msg.published, msg.duplicates) == (7, 4, 4, 0)
    assert msg.streams == ("T",)  # named by the pub acks
    stored = read_stream(server.url, "T")
    assert [(m.subject, m.data, m.msg_id) for m in stored] == [
        ("t.1", b"a", f"w:7:{content_digest(b't.1', b'H: 1' + CRLF + b'H: 2' + CRLF, b'a')}:0"),
        ("t.2", b"", f"w:7:{content_digest(b't.2', b'', b'')}:0"),
        ("t.1", b"c", f"w:7:{content_digest(b't.1', b'', b'c')}:0"),
        ("t.9", b"d", f"w:7:{content_digest(b't.9', b'', b'd')}:0"),
    ]
    assert stored[0].headers["H"] == ["1", "2"]
    assert "Nats-Expected-Last-Sequence" not in stored[2].headers
    assert "H" not in stored[3].headers
    # the same task again (a retry) with its rows in another order: same ids, all duplicates
    reordered = batch(
        data=pa.array(["d", "c", None, "a"]),
        subject=pa.array(["t.9", "t.1", "t.2", "t.1"]),
        headers=pa.array([[("H", [None])], [("Nats-Expected-Last-Sequence", ["5"])], None, [("H", ["1", "2"])]], MULTI),
    )
    again = publish_batches(opts, cols, iter([reordered]), "w", 7, attempt=1)
    assert (again.published, again.duplicates, again.attempt) == (0, 4, 1)
    assert stream_info(server.url, "T")["state"]["messages"] == 4


def test_nats_headers_of_source_rows_are_dropped_unless_kept(server: ServerProcess) -> None:
    # a row read from a stream carries server directives: copied, Nats-Rollup would purge the
    # target subject (or be refused) and Nats-TTL fails on a stream without per-message TTLs
    create_stream(server.url, "H", ["h.>"])
    cols = WriteColumns(data="data", data_is_string=True, subject="subject", headers="headers", headers_multi=True)
    directives = [("Nats-Rollup", ["sub"]), ("Nats-TTL", ["1s"]), ("nats-expected-stream", ["X"]),
                  ("Nats-Msg-Id", ["src-1"]), ("Nats-App-Tag", ["t"]), ("X-App", ["a"])]
    rows = batch(
        data=pa.array(["1", "2"]), subject=pa.array(["h.a", "h.a"]), headers=pa.array([directives, directives], MULTI)
    )
    plain = WriteOptions.from_options({"servers": server.url})
    msg = publish_batches(plain, cols, iter([rows]), "s1", 0)
    assert (msg.published, msg.duplicates) == (2, 0)
    stored = read_stream(server.url, "H")
    assert [m.data for m in stored] == [b"1", b"2"]  # no rollup wiped the first
    assert all(set(m.headers) == {"Nats-Msg-Id", "X-App"} for m in stored), stored
    assert all(m.msg_id != "src-1" for m in stored)
    keep = WriteOptions.from_options({"servers": server.url, "keepNatsHeaders": "nats-app-tag"})
    publish_batches(keep, cols, iter([rows]), "s2", 0)
    kept = read_stream(server.url, "H")[2:]
    assert all(m.headers.get("Nats-App-Tag") == ["t"] and "Nats-Rollup" not in m.headers for m in kept)


@pytest.mark.parametrize(
    ("headers", "subject", "message"),
    [
        ([("Bad:Name", ["x"])], "t.1", "header name 'Bad:Name' in row 1 of partition 0"),
        ([("X", ["a\r\nInjected: 1"])], "t.1", "header 'X' in row 1 of partition 0 holds a line break"),
        ([("X", ["ok"])], "t.*", "column 'subject' holds 't.\\*' in row 1 of partition 0"),
        ([("X", ["ok"])], None, "column 'subject' is null in row 1 of partition 0"),
    ],
)
def test_bad_row_values_fail_the_task_naming_column_and_row(
    server: ServerProcess, headers: list[tuple[str, list[str]]], subject: str | None, message: str
) -> None:
    create_stream(server.url, "T", ["t.>"])
    opts = WriteOptions.from_options({"servers": server.url})
    cols = WriteColumns(data="data", data_is_string=False, subject="subject", headers="headers", headers_multi=True)
    b = batch(
        data=pa.array([b"ok", b"bad"]),
        subject=pa.array(["t.1", subject]),
        headers=pa.array([[], headers], MULTI),
    )
    with pytest.raises(RowValueError, match=message):
        publish_batches(opts, cols, iter([b]), "w", 0)


def test_an_empty_partition_does_not_connect() -> None:
    opts = WriteOptions.from_options({"servers": "nats://127.0.0.1:1", "subject": "x"})
    cols = WriteColumns(data="data", data_is_string=False)
    empty = pa.record_batch([pa.array([], pa.binary())], names=["data"])
    msg = publish_batches(opts, cols, iter([empty]), "w", 3)
    assert (msg.rows, msg.published, msg.duplicates) == (0, 0, 0)
