"""Bulk conversion of fetched messages (`lean_client.Chunk`) to Arrow record batches.

The read schema is fixed (see `read_schema`); `arrow_schema` is exactly what
Spark expects for it (`to_arrow_schema(..., timezone="UTC")`), because Spark
rejects a batch whose Arrow schema differs in any way. Columns are built once
per chunk from Python lists (one `pa.array` call each), never row by row;
subjects arrive as bytes and become strings with one validated cast.

Headers: `map<string, array<string>>`; a name that appears several times keeps
all its values in order; a message without headers has a null map. The
`headers` column exists only when `includeHeaders` is true.
"""

from __future__ import annotations

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

from spark_jetstream.lean_client import Chunk, parse_headers

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


def chunk_to_batch(chunk: Chunk, stream: str, schema: pa.Schema) -> pa.RecordBatch:
    n = len(chunk.seqs)
    cols: list[pa.Array] = [
        pa.array(chunk.subjects, type=pa.binary()).cast(pa.string()),
        pa.array(chunk.data, type=pa.binary()),
    ]
    if "headers" in schema.names:
        blocks = chunk.headers or []
        if any(blocks):
            cols.append(pa.array([headers_value(b) for b in blocks], type=HEADERS_TYPE))
        else:
            cols.append(pa.nulls(n, type=HEADERS_TYPE))
    ts_us = pc.divide(pa.array(chunk.ts_ns, type=pa.int64()), 1000).cast(pa.timestamp("us", tz="UTC"))
    cols += [
        pa.repeat(pa.scalar(stream, pa.string()), n) if n else pa.array([], pa.string()),
        pa.array(chunk.seqs, type=pa.int64()),
        ts_us,
    ]
    return pa.RecordBatch.from_arrays(cols, schema=schema)
