"""Bulk conversion of fetched messages (`client.lean_client.Chunk`) to Arrow record batches.

The read schema is fixed (see `read_schema`); `arrow_schema` is exactly what
Spark expects for it (`to_arrow_schema(..., timezone="UTC")`), because Spark
rejects a batch whose Arrow schema differs in any way. Columns are built once
per chunk from Python lists (one `pa.array` call each), never row by row;
subjects arrive as bytes and become strings with one validated cast.

Headers: `map<string, array<string>>`; a name that appears several times keeps
all its values in order; a message without headers has a null map. The
`headers` column exists only when `includeHeaders` is true. Header blocks are
parsed with Arrow compute kernels for the whole chunk (`headers_column`); a
chunk with a repeated name in one message, bytes that are not UTF-8 or a bad
status line takes the per-message path (`headers_value`), which gives the same
result (or the same error).
"""

from __future__ import annotations

from itertools import accumulate

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_jetstream.client.lean_client import Chunk, parse_headers

HEADERS_TYPE = pa.map_(pa.string(), pa.list_(pa.string()))


def read_schema(include_headers: bool = True) -> StructType:
    fields = [
        StructField("subject", StringType(), True),
        StructField("data", BinaryType(), True),
    ]
    if include_headers:
        fields.append(StructField("headers", MapType(StringType(), ArrayType(StringType(), True), True), True))
    fields += [
        StructField("stream", StringType(), True),
        StructField("seq", LongType(), True),
        StructField("timestamp", TimestampType(), True),
    ]
    return StructType(fields)


def arrow_schema(include_headers: bool = True) -> pa.Schema:
    fields = [pa.field("subject", pa.string()), pa.field("data", pa.binary())]
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    fields += [
        pa.field("stream", pa.string()),
        pa.field("seq", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    ]
    return pa.schema(fields)


def headers_value(block: bytes) -> list[tuple[str, list[str]]] | None:
    """One header block -> map entries (name -> all its values, first-seen order)."""
    if not block:
        return None
    _, _, items = parse_headers(block)
    if not items:
        return None
    grouped: dict[str, list[str]] = {}
    for name, value in items:
        grouped.setdefault(name, []).append(value)
    return list(grouped.items())


def headers_column(blocks: list[bytes]) -> pa.Array:
    """Raw header blocks ('' = none) -> the `headers` column, parsed in bulk."""
    n = len(blocks)
    if not any(blocks):
        return pa.nulls(n, type=HEADERS_TYPE)
    try:
        text = pa.array(blocks, type=pa.binary()).cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: the per-message path decodes with replacement
        return _headers_per_message(blocks)
    present = pc.greater(pc.binary_length(text), 0)
    if not pc.all(pc.or_(pc.invert(present), pc.starts_with(text, "NATS/1.0"))).as_py():
        return _headers_per_message(blocks)  # raises naming the bad block
    # drop the status line, then one list entry per `Name: value` line
    body = pc.replace_substring_regex(text, pattern=r"(?s)^.*?(?:\r\n|$)", replacement="", max_replacements=1)
    lines = pc.split_pattern(body, "\r\n")
    flat = pc.list_flatten(lines)
    keep = pc.match_substring(flat, ":")
    entries = pc.split_pattern(pc.filter(flat, keep), ":", max_splits=1)
    rows = pc.filter(pc.list_parent_indices(lines), keep)
    names = pc.utf8_trim_whitespace(pc.list_element(entries, 0))
    values = pc.utf8_trim_whitespace(pc.list_element(entries, 1))
    per_row = pc.value_counts(rows)
    counts = [0] * n
    for row, count in zip(per_row.field(0).to_pylist(), per_row.field(1).to_pylist(), strict=True):
        counts[row] = count
    if len(rows) > len(per_row):  # some message has several lines: are names repeated?
        pairs = pa.table({"row": rows, "name": names}).group_by(["row", "name"]).aggregate([])
        if pairs.num_rows < len(rows):
            return _headers_per_message(blocks)
    offsets = pa.array(list(accumulate(counts, initial=0)), type=pa.int32())
    items = pa.ListArray.from_arrays(pa.array(range(len(values) + 1), type=pa.int32()), values)
    mask = pa.array([c == 0 for c in counts], type=pa.bool_())
    return pa.MapArray.from_arrays(offsets, names, items, type=HEADERS_TYPE, mask=mask)


def _headers_per_message(blocks: list[bytes]) -> pa.Array:
    return pa.array([headers_value(b) for b in blocks], type=HEADERS_TYPE)


def chunk_to_batch(chunk: Chunk, stream: str, schema: pa.Schema) -> pa.RecordBatch:
    n = len(chunk.seqs)
    cols: list[pa.Array] = [
        pa.array(chunk.subjects, type=pa.binary()).cast(pa.string()),
        pa.array(chunk.data, type=pa.binary()),
    ]
    if "headers" in schema.names:
        cols.append(headers_column(chunk.headers) if chunk.headers else pa.nulls(n, type=HEADERS_TYPE))
    ts_us = pc.divide(pa.array(chunk.ts_ns, type=pa.int64()), 1000).cast(pa.timestamp("us", tz="UTC"))
    cols += [
        pa.repeat(pa.scalar(stream, pa.string()), n) if n else pa.array([], pa.string()),
        pa.array(chunk.seqs, type=pa.int64()),
        ts_us,
    ]
    return pa.RecordBatch.from_arrays(cols, schema=schema)
