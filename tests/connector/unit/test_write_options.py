"""Write options (options/write.py): parsing, defaults, and errors that name the option."""

from __future__ import annotations

import pytest

from spark_jetstream.options import OptionError, WriteOptions
from spark_jetstream.options.table import OPTIONS, Scope, write_table

WRITE_OPTIONS = [o for o in OPTIONS if o.applies == Scope.WRITE]


def test_defaults() -> None:
    opts = WriteOptions.from_options({})
    assert opts.subject is None and opts.stream is None
    assert opts.max_in_flight == 2048
    assert opts.ack_timeout_s == 30.0
    # above nats-server's default duplicate_window (2m): the check fires on a default stream
    assert opts.dedup_window_check_ns == 600 * 10**9
    assert opts.dedup_window_check_mode == "warn"
    assert opts.msg_id_prefix == ""
    assert (opts.msg_id_mode, opts.msg_id_scope, opts.msg_id_columns) == ("auto", None, ())
    assert opts.keep_nats_headers == frozenset()
    assert opts.connection.servers == ("nats://127.0.0.1:4222",)


def test_every_option_in_the_table_is_accepted_case_insensitively() -> None:
    values = {
        "subject": "a.b",
        "stream": "S",
        "maxInFlight": "16",
        "ackTimeout": "2.5",
        "dedupWindowCheck": "10m",
        "dedupWindowCheckMode": "FAIL",
        "msgIdPrefix": "p1-",
        "msgIdMode": "Source",
        "msgIdScope": "pipe:1",
        "keepNatsHeaders": "Nats-Rollup, nats-ttl",
    }
    assert set(values) | {"msgIdColumns"} == {spec.name for spec in WRITE_OPTIONS}
    opts = WriteOptions.from_options({k.upper(): v for k, v in values.items()} | {"servers": "nats://h:1"})
    assert (opts.subject, opts.stream, opts.max_in_flight, opts.ack_timeout_s) == ("a.b", "S", 16, 2.5)
    assert opts.dedup_window_check_ns == 600 * 10**9
    assert opts.dedup_window_check_mode == "fail"
    assert opts.msg_id_prefix == "p1-"
    assert (opts.msg_id_mode, opts.msg_id_scope) == ("source", "pipe:1")
    assert opts.keep_nats_headers == {"nats-rollup", "nats-ttl"}
    assert opts.connection.servers == ("nats://h:1",)
    columns = WriteOptions.from_options({"msgIdColumns": "order_id, Line"})
    assert columns.msg_id_columns == ("order_id", "Line")


def test_spark_own_options_are_accepted() -> None:
    WriteOptions.from_options({"checkpointLocation": "/tmp/x", "path": "p", "queryName": "q"})


def test_unknown_option_is_named() -> None:
    with pytest.raises(OptionError, match="unknown option.*maxinflite"):
        WriteOptions.from_options({"maxInFlite": "10"})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"maxInFlight": "many"}, "option maxInFlight: expected an integer, got 'many'"),
        ({"maxInFlight": "0"}, "option maxInFlight: must be between 1 and 65536"),
        ({"maxInFlight": "100000"}, "option maxInFlight: must be between 1 and 65536"),
        ({"ackTimeout": "soon"}, "option ackTimeout: expected a number"),
        ({"ackTimeout": "0"}, "option ackTimeout: must be >= 0.1"),
        ({"dedupWindowCheck": "10 minutes"}, "option dedupWindowCheck: expected a duration"),
        ({"dedupWindowCheck": "10x"}, "option dedupWindowCheck: expected a duration"),
        ({"dedupWindowCheck": "-5s"}, "option dedupWindowCheck: expected a duration"),
        ({"dedupWindowCheckMode": "loud"}, "option dedupWindowCheckMode: expected warn or fail"),
        ({"subject": "orders.*"}, "option subject: 'orders.\\*' is not a subject to publish to"),
        ({"subject": "orders..x"}, "option subject: 'orders..x' has an empty token"),
        ({"subject": "a b"}, "option subject: 'a b' is not a subject"),
        ({"stream": "my.stream"}, "option stream: invalid stream name 'my.stream'"),
        ({"servers": "localhost"}, "option servers"),
        ({"msgIdPrefix": "a\nb"}, "option msgIdPrefix"),
        ({"msgIdMode": "hash"}, "option msgIdMode: expected auto or column or content or source"),
        ({"msgIdMode": "source"}, "msgIdMode=source needs msgIdScope"),
        ({"msgIdScope": "a\rb"}, "option msgIdScope"),
        ({"msgIdColumns": "a,A"}, "option msgIdColumns: a column is named twice"),
        ({"msgIdColumns": "a", "msgIdMode": "column"}, "msgIdColumns applies to content ids"),
        ({"keepNatsHeaders": "X-Trace"}, "option keepNatsHeaders: 'X-Trace' is not a Nats-\\* header"),
        ({"keepNatsHeaders": "Nats-Msg-Id"}, "Nats-Msg-Id is set by the sink"),
    ],
)
def test_bad_values_name_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        WriteOptions.from_options(options)


def test_markdown_table_lists_every_option() -> None:
    table = write_table()
    assert all(f"| `{spec.name}` |" in table for spec in WRITE_OPTIONS)


@pytest.mark.parametrize(
    ("raw", "seconds"), [("30", 30.0), ("2.5", 2.5), ("1m", 60.0), ("1m30s", 90.0), ("500ms", 0.5), ("0.1", 0.1)]
)
def test_ack_timeout_is_a_duration_in_seconds_by_default(raw: str, seconds: float) -> None:
    assert WriteOptions.from_options({"ackTimeout": raw}).ack_timeout_s == pytest.approx(seconds)


def test_empty_values_are_unset() -> None:
    opts = WriteOptions.from_options(
        {"maxInFlight": "", "dedupWindowCheck": " ", "dedupWindowCheckMode": "", "subject": "", "msgIdPrefix": ""}
    )
    assert opts == WriteOptions()
