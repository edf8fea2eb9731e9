"""Write options and write columns: parsing, defaults, and errors that name the problem."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_jetstream.connection import OptionError
from spark_jetstream.write_options import (
    WRITE_OPTIONS,
    WriteOptions,
    format_duration_ns,
    parse_duration_ns,
)
from spark_jetstream.write_schema import SchemaError, validate_write_schema


def test_defaults() -> None:
    opts = WriteOptions.from_options({})
    assert opts.subject is None and opts.stream is None
    assert opts.max_in_flight == 2048
    assert opts.ack_timeout_s == 30.0
    assert opts.dedup_window_check_ns == 120 * 10**9
    assert opts.dedup_window_check_mode == "warn"
    assert opts.msg_id_prefix == ""
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
    }
    assert set(values) == {spec.name for spec in WRITE_OPTIONS}
    opts = WriteOptions.from_options({k.upper(): v for k, v in values.items()} | {"servers": "nats://h:1"})
    assert (opts.subject, opts.stream, opts.max_in_flight, opts.ack_timeout_s) == ("a.b", "S", 16, 2.5)
    assert opts.dedup_window_check_ns == 600 * 10**9
    assert opts.dedup_window_check_mode == "fail"
    assert opts.msg_id_prefix == "p1-"
    assert opts.connection.servers == ("nats://h:1",)


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
        ({"stream": "my.stream"}, "option stream: 'my.stream' is not a stream name"),
        ({"servers": "localhost"}, "option servers"),
        ({"msgIdPrefix": "a\nb"}, "option msgIdPrefix"),
    ],
)
def test_bad_values_name_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        WriteOptions.from_options(options)


@pytest.mark.parametrize(
    ("text", "ns"),
    [("0", 0), ("600", 600 * 10**9), ("2min", 120 * 10**9), ("1d", 86400 * 10**9), ("90s", 90 * 10**9), ("10m", 600 * 10**9), ("1h30m", 5400 * 10**9), ("500ms", 5 * 10**8), ("1.5s", 15 * 10**8)],
)
def test_durations(text: str, ns: int) -> None:
    assert parse_duration_ns("x", text) == ns


def test_markdown_table_lists_every_option() -> None:
    from spark_jetstream.write_options import write_options_markdown

    table = write_options_markdown()
    assert all(f"| `{spec.name}` |" in table for spec in WRITE_OPTIONS)


def test_format_duration() -> None:
    assert format_duration_ns(120 * 10**9) == "2m"
    assert format_duration_ns(5 * 10**9) == "5s"
    assert format_duration_ns(1500 * 10**6) == "1.5s"
    assert format_duration_ns(3600 * 10**9) == "1h"


def schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, dtype) for name, dtype in fields])  # type: ignore[arg-type]


HDR_MULTI = MapType(StringType(), ArrayType(StringType()))
HDR_SINGLE = MapType(StringType(), StringType())


def test_full_source_schema_uses_source_coordinates() -> None:
    cols = validate_write_schema(
        schema(
            ("subject", StringType()),
            ("data", BinaryType()),
            ("headers", HDR_MULTI),
            ("stream", StringType()),
            ("seq", LongType()),
            ("timestamp", TimestampType()),
        ),
        None,
    )
    assert (cols.data, cols.data_is_string, cols.subject, cols.headers) == ("data", False, "subject", "headers")
    assert cols.headers_multi and cols.has_source_coordinates and cols.msg_id is None


def test_string_data_single_headers_msg_id_subject_option_wins() -> None:
    cols = validate_write_schema(
        schema(("Data", StringType()), ("subject", StringType()), ("headers", HDR_SINGLE), ("MSG_ID", StringType())),
        "fixed",
    )
    assert cols.data == "Data" and cols.data_is_string
    assert cols.subject is None  # the option wins over the column
    assert cols.headers == "headers" and not cols.headers_multi
    assert cols.msg_id == "MSG_ID"
    assert not cols.has_source_coordinates


def test_seq_without_stream_is_not_a_coordinate() -> None:
    cols = validate_write_schema(schema(("data", BinaryType()), ("seq", IntegerType())), "s")
    assert not cols.has_source_coordinates


@pytest.mark.parametrize(
    ("fields", "subject_option", "message"),
    [
        ((("value", BinaryType()),), "s", "needs a column 'data' \\(binary or string\\); the DataFrame has: value"),
        ((("data", IntegerType()),), "s", "column 'data' has type int; the jetstream sink expects binary or string"),
        ((("data", BinaryType()),), None, "no subject: give the jetstream sink a 'subject' column"),
        ((("data", BinaryType()), ("subject", BinaryType())), None, "column 'subject' has type binary; .* expects string"),
        ((("data", BinaryType()), ("headers", StringType())), "s", "column 'headers' has type string; .*map<string,string> or map<string,array<string>>"),
        ((("data", BinaryType()), ("headers", MapType(StringType(), IntegerType()))), "s", "column 'headers' has type map<string,int>"),
        ((("data", BinaryType()), ("msg_id", LongType())), "s", "column 'msg_id' has type bigint; .* expects string"),
        ((("data", BinaryType()), ("stream", StringType()), ("seq", DoubleType())), "s", "column 'seq' has type double"),
        ((("data", BinaryType()), ("DATA", BinaryType())), "s", "column 'DATA' appears twice"),
    ],
)
def test_bad_columns_are_named(fields: tuple[tuple[str, object], ...], subject_option: str | None, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        validate_write_schema(schema(*fields), subject_option)
