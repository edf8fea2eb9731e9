"""Which DataFrame columns the `jetstream` sink uses, checked on the driver.

Columns (names are matched case-insensitively, like Spark column names):
- `data`: binary or string (UTF-8), required; null publishes an empty payload.
- `subject`: string; required unless the `subject` option is set (the option wins).
- `headers`: map<string,string> or map<string,array<string>>, optional.
- `msg_id`: string, optional; the `Nats-Msg-Id` of the row as given.
- `stream` (string) + `seq` (integer): the source coordinates the `jetstream`
  source emits; ids are derived from them only with `msgIdMode=source` (an
  explicit choice: a DataFrame that merely has such columns keeps content ids).
- the `msgIdColumns` option's columns, any type: their values identify a row.
Other columns (e.g. the source's `timestamp`) are not published.

The id mode is resolved here, once: `auto` becomes `column` when there is a
`msg_id` column and `content` otherwise; `column` without a `msg_id` column
and `source` without `stream`/`seq` are refused.

`validate_write_schema` raises `SchemaError` naming the column and its type
before anything is published; the resulting `WriteColumns` is a small frozen
value pickled to the executors.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

log = logging.getLogger(__name__)

# Columns the jetstream source emits that the sink knowingly does not publish.
SOURCE_ONLY_COLUMNS = frozenset({"timestamp"})


class SchemaError(ValueError):
    """The DataFrame cannot be written: the message names the column and type."""


@dataclass(frozen=True, slots=True)
class WriteColumns:
    """Resolved column names (as spelled in the DataFrame) and kinds."""

    data: str
    data_is_string: bool
    subject: str | None = None
    headers: str | None = None
    headers_multi: bool = False  # map<string,array<string>>
    msg_id: str | None = None
    source_stream: str | None = None
    source_seq: str | None = None
    id_mode: str = "content"  # column, content or source (never auto)
    id_columns: tuple[str, ...] = ()  # msgIdColumns as spelled in the DataFrame

    @property
    def has_source_coordinates(self) -> bool:
        return self.source_stream is not None and self.source_seq is not None

    def used(self) -> list[str]:
        return [
            c
            for c in (
                self.data,
                self.subject,
                self.headers,
                self.msg_id,
                self.source_stream,
                self.source_seq,
            )
            if c is not None
        ]


def _type_name(dtype: DataType) -> str:
    return dtype.simpleString()


def validate_write_schema(
    schema: StructType,
    subject_option: str | None,
    msg_id_mode: str = "auto",
    msg_id_columns: tuple[str, ...] = (),
) -> WriteColumns:
    by_name: dict[str, tuple[str, DataType]] = {}
    for f in schema.fields:
        key = f.name.lower()
        if key in by_name:
            raise SchemaError(f"column {f.name!r} appears twice (column names are case-insensitive)")
        by_name[key] = (f.name, f.dataType)

    def wrong(name: str, dtype: DataType, expected: str) -> SchemaError:
        return SchemaError(
            f"column {name!r} has type {_type_name(dtype)}; the jetstream sink expects {expected}"
        )

    if "data" not in by_name:
        columns = ", ".join(f.name for f in schema.fields) or "(none)"
        raise SchemaError(
            f"the jetstream sink needs a column 'data' (binary or string); the DataFrame has: {columns}"
        )
    data_name, data_type = by_name["data"]
    if not isinstance(data_type, (BinaryType, StringType)):
        raise wrong(data_name, data_type, "binary or string")

    subject_name: str | None = None
    if "subject" in by_name:
        subject_name, subject_type = by_name["subject"]
        if not isinstance(subject_type, StringType):
            raise wrong(subject_name, subject_type, "string")
        if subject_option is not None:
            subject_name = None  # the option wins
    elif subject_option is None:
        raise SchemaError(
            "no subject: give the jetstream sink a 'subject' column (string) or the 'subject' option"
        )

    headers_name: str | None = None
    headers_multi = False
    if "headers" in by_name:
        headers_name, headers_type = by_name["headers"]
        expected = "map<string,string> or map<string,array<string>>"
        if not isinstance(headers_type, MapType) or not isinstance(headers_type.keyType, StringType):
            raise wrong(headers_name, headers_type, expected)
        value_type = headers_type.valueType
        if isinstance(value_type, ArrayType) and isinstance(value_type.elementType, StringType):
            headers_multi = True
        elif not isinstance(value_type, StringType):
            raise wrong(headers_name, headers_type, expected)

    msg_id_name: str | None = None
    if "msg_id" in by_name:
        msg_id_name, msg_id_type = by_name["msg_id"]
        if not isinstance(msg_id_type, StringType):
            raise wrong(msg_id_name, msg_id_type, "string")

    stream_name: str | None = None
    seq_name: str | None = None
    if "stream" in by_name and "seq" in by_name:
        stream_name, stream_type = by_name["stream"]
        seq_name, seq_type = by_name["seq"]
        if not isinstance(stream_type, StringType):
            raise wrong(stream_name, stream_type, "string (the source stream of the row)")
        if not isinstance(seq_type, (LongType, IntegerType, ShortType, ByteType)):
            raise wrong(seq_name, seq_type, "an integer type (the source stream sequence of the row)")

    id_columns: list[str] = []
    for wanted in msg_id_columns:
        if wanted.lower() not in by_name:
            columns = ", ".join(f.name for f in schema.fields)
            raise SchemaError(
                f"option msgIdColumns names column {wanted!r}, which the DataFrame does not have "
                f"(it has: {columns})"
            )
        id_columns.append(by_name[wanted.lower()][0])

    if msg_id_mode == "auto":
        msg_id_mode = "column" if msg_id_name is not None else "content"
    elif msg_id_mode == "column" and msg_id_name is None:
        raise SchemaError("msgIdMode=column needs a column 'msg_id' (string)")
    elif msg_id_mode == "source" and stream_name is None:
        raise SchemaError(
            "msgIdMode=source needs the source coordinate columns 'stream' (string) and 'seq' "
            "(integer) that the jetstream source emits"
        )
    if msg_id_mode != "column" and msg_id_name is not None:
        log.warning("jetstream sink: msgIdMode=%s: the msg_id column is not used", msg_id_mode)

    resolved = WriteColumns(
        data=data_name,
        data_is_string=isinstance(data_type, StringType),
        subject=subject_name,
        headers=headers_name,
        headers_multi=headers_multi,
        msg_id=msg_id_name,
        source_stream=stream_name,
        source_seq=seq_name,
        id_mode=msg_id_mode,
        id_columns=tuple(id_columns),
    )
    used = {c.lower() for c in resolved.used()} | {"subject"} | {c.lower() for c in id_columns}
    ignored = [
        name
        for key, (name, _) in by_name.items()
        if key not in used and key not in SOURCE_ONLY_COLUMNS and key not in ("stream", "seq")
    ]
    if ignored:
        log.warning("jetstream sink: columns not published: %s", ", ".join(ignored))
    return resolved
