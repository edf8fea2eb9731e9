"""Write columns (write/schema.py): which DataFrame columns the sink uses, errors naming the column."""

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

from spark_jetstream.write.schema import SchemaError, validate_write_schema


def schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, dtype) for name, dtype in fields])  # type: ignore[arg-type]


HDR_MULTI = MapType(StringType(), ArrayType(StringType()))
HDR_SINGLE = MapType(StringType(), StringType())


def test_full_source_schema_keeps_content_ids_unless_source_mode_is_asked() -> None:
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
    assert cols.id_mode == "content"  # columns named stream and seq switch nothing on


def test_id_modes_resolve_once() -> None:
    src = schema(("data", BinaryType()), ("stream", StringType()), ("seq", LongType()), ("ID", StringType()))
    assert validate_write_schema(src, "s", "source").id_mode == "source"
    with_id = schema(("data", BinaryType()), ("msg_id", StringType()))
    assert validate_write_schema(with_id, "s").id_mode == "column"
    assert validate_write_schema(with_id, "s", "content").id_mode == "content"
    cols = validate_write_schema(src, "s", "content", ("id",))
    assert cols.id_columns == ("ID",)


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


@pytest.mark.parametrize(
    ("mode", "id_columns", "message"),
    [
        ("column", (), "msgIdMode=column needs a column 'msg_id'"),
        ("source", (), "msgIdMode=source needs the source coordinate columns 'stream'"),
        ("content", ("order_id",), "msgIdColumns names column 'order_id', which the DataFrame does not have"),
    ],
)
def test_id_mode_without_its_columns_is_named(mode: str, id_columns: tuple[str, ...], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        validate_write_schema(schema(("data", BinaryType()), ("seq", LongType())), "s", mode, id_columns)
