"""Bulk conversion of fetched messages to Arrow record batches.

A range read delivers `RawChunk`s (client/msg_runs.py: whole frames back to
back and where each starts); `chunk_to_batch` parses them with Arrow kernels
on the whole chunk, never message by message in Python: the frame lines are
cut out by offsets (`find_substring`), split into tokens (subject, reply,
header size), the reply's stream sequence and timestamp split off and cast;
payloads and header blocks are taken by offsets into one buffer each. A
chunk whose lines or replies do not have the expected shape takes the
per-message parse (`RawChunk.to_chunk`), which gives the same values or the
same error. The message-get path delivers `Chunk`s (column lists).

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

from collections.abc import Sequence
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

from spark_jetstream.client.frames import parse_headers
from spark_jetstream.client.msg_runs import Chunk, RawChunk

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


def headers_column(blocks: Sequence[bytes] | pa.Array) -> pa.Array:
    """Raw header blocks ('' = none) -> the `headers` column, parsed in bulk."""
    n = len(blocks)
    raw = blocks if isinstance(blocks, pa.Array) else pa.array(blocks, type=pa.binary())
    if not n or not pc.max(pc.binary_length(raw)).as_py():
        return pa.nulls(n, type=HEADERS_TYPE)
    try:
        text = raw.cast(pa.string())
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


def _headers_per_message(blocks: Sequence[bytes] | pa.Array) -> pa.Array:
    values = blocks.to_pylist() if isinstance(blocks, pa.Array) else blocks
    return pa.array([headers_value(b) for b in values], type=HEADERS_TYPE)


def chunk_to_batch(chunk: Chunk | RawChunk, stream: str, schema: pa.Schema) -> pa.RecordBatch:
    """One record batch of `schema` for the chunk's messages."""
    want_headers = "headers" in schema.names
    columns = _raw_columns(chunk, want_headers) if isinstance(chunk, RawChunk) else None
    if columns is None:
        listed = chunk.to_chunk() if isinstance(chunk, RawChunk) else chunk
        columns = _list_columns(listed, want_headers)
    subjects, payloads, blocks, seqs, ts_ns = columns
    n = len(seqs)
    cols: list[pa.Array] = [subjects, payloads]
    if want_headers:
        cols.append(headers_column(blocks) if blocks is not None else pa.nulls(n, type=HEADERS_TYPE))
    cols += [
        pa.repeat(pa.scalar(stream, pa.string()), n) if n else pa.array([], pa.string()),
        seqs,
        pc.divide(ts_ns, 1000).cast(pa.timestamp("us", tz="UTC")),
    ]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


Columns = tuple[pa.Array, pa.Array, "pa.Array | None", pa.Array, pa.Array]


def _list_columns(chunk: Chunk, want_headers: bool) -> Columns:
    """Columns from column lists (one `pa.array` call each)."""
    return (
        pa.array(chunk.subjects, type=pa.binary()).cast(pa.string()),
        pa.array(chunk.data, type=pa.binary()),
        pa.array(chunk.headers, type=pa.binary()) if want_headers and chunk.headers else None,
        pa.array(chunk.seqs, type=pa.int64()),
        pa.array(chunk.ts_ns, type=pa.int64()),
    )


def _arange(n: int) -> pa.Array:
    """0, 1, ..., n-1 as int32."""
    if not n:
        return pa.array([], pa.int32())
    return pc.subtract(pc.cumulative_sum(pc.fill_null(pa.nulls(n, pa.int32()), 1)), 1)


def _interleave(cols: list[pa.Array]) -> pa.Array:
    """[c0[0], c1[0], ..., c0[1], c1[1], ...] for int32 columns of equal length."""
    k, n = len(cols), len(cols[0])
    j = _arange(k * n)
    q = pc.divide(j, k)
    r = pc.subtract(j, pc.multiply(q, k))
    return pc.take(pa.concat_arrays([c.cast(pa.int32()) for c in cols]), pc.add(pc.multiply(r, n), q))


def _pieces(data: pa.Buffer, bounds: list[pa.Array], total: int) -> pa.Array:
    """`data` cut at the interleaved `bounds` (int32, ascending): piece i*k + j starts at bounds[j][i]."""
    offsets = pa.concat_arrays([_interleave(bounds), pa.array([total], pa.int32())])
    return pa.Array.from_buffers(pa.binary(), len(offsets) - 1, [None, offsets.buffers()[1], data])


def _every(n: int, k: int, j: int) -> pa.Array:
    return pc.add(pc.multiply(_arange(n), k), j)


def _raw_columns(raw: RawChunk, want_headers: bool) -> Columns | None:
    """Columns of a raw chunk by Arrow kernels; None when its frames have an unexpected shape.

    Pieces by the chunk's marks: per frame the op and subject (``MSG s``), the
    tail of the line (`` <sid> <reply> [<hdr size> ]<size>``) and the body
    (CRLF, header block, payload, CRLF). One reply layout per chunk (msg_runs.py).
    """
    n, total = len(raw), len(raw.buf)
    if not n:
        return None
    reply0 = raw.buf[raw.marks[1] - raw.base : raw.marks[2] - raw.base].split(b" ")
    if len(reply0) < 4:
        return None
    twelve = reply0[2].count(b".") == 11  # the layout with a random last token
    data = pa.py_buffer(raw.buf)
    marks = pa.array([*raw.marks, total + raw.base], pa.int64())
    if raw.base:
        marks = pc.subtract(marks, raw.base)
    marks = marks.cast(pa.int32())
    pieces = pa.Array.from_buffers(pa.binary(), 3 * n, [None, marks.buffers()[1], data])
    heads = pc.take(pieces, _every(n, 3, 0))
    tails = pc.take(pieces, _every(n, 3, 1))
    parts = pc.split_pattern(tails, ".", max_splits=5, reverse=True)
    if pc.min(pc.list_value_length(parts)).as_py() < 6:
        return None
    seqs = pc.list_element(parts, 1 if twelve else 2).cast(pa.string()).cast(pa.int64())
    ts_ns = pc.list_element(parts, 3 if twelve else 4).cast(pa.string()).cast(pa.int64())
    if b"HMSG " not in raw.buf:  # no frame has headers: bodies are CRLF payload CRLF
        subjects = pc.binary_slice(heads, 4, total)
        payloads = pc.binary_slice(pc.take(pieces, _every(n, 3, 2)), 2, -2)
        blocks = None
    else:
        is_h = pc.equal(pc.binary_slice(heads, 0, 1), pa.scalar(b"H"))
        subjects = pc.if_else(is_h, pc.binary_slice(heads, 5, total), pc.binary_slice(heads, 4, total))
        hsize_text = pc.list_element(pc.split_pattern(tails, " ", max_splits=2, reverse=True), 1)
        hsize = pc.if_else(is_h, hsize_text, pa.scalar(b"0")).cast(pa.string()).cast(pa.int32())
        body = pc.add(pc.take(marks, _every(n, 3, 2)), 2)
        pay_start = pc.add(body, hsize)
        pay_end = pc.subtract(pc.take(marks, _every(n, 3, 3)), 2)
        parts2 = _pieces(data, [body, pay_start, pay_end], total)
        payloads = pc.take(parts2, _every(n, 3, 1))
        blocks = pc.take(parts2, _every(n, 3, 0)) if want_headers and raw.with_headers else None
    return subjects.cast(pa.string()), payloads, blocks, seqs, ts_ns
