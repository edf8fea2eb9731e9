"""Bulk conversion of fetched messages to Arrow record batches.

A range read delivers `RawChunk`s (client/msg_runs.py: whole frames back to
back and an index of where each frame's parts are, with its stream sequence
and timestamp, found by client/frame_scan.py); `chunk_to_batch` builds every
column of the chunk at once, never message by message in Python: subjects,
payloads and header blocks are cut from the chunk's one buffer by the
index's positions (one binary array over the buffer, then one `take` per
column), sequences and timestamps are the index's int64 arrays. The
message-get path delivers `Chunk`s (column lists).

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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
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

from spark_jetstream.client.frame_scan import BytePositions, FrameIndex
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
    absent = pc.equal(pc.binary_length(text), 0)
    if not pc.all(pc.or_(absent, pc.starts_with(text, "NATS/1.0"))).as_py():
        return _headers_per_message(blocks)  # raises naming the bad block
    rows, names, values = _one_line_each(text) or _any_lines(text)
    names, values = pc.utf8_trim_whitespace(names), pc.utf8_trim_whitespace(values)
    counts = np.bincount(rows, minlength=n)
    if len(rows) > np.count_nonzero(counts):  # some message has several lines: are names repeated?
        pairs = pa.table({"row": rows, "name": names}).group_by(["row", "name"]).aggregate([])
        if pairs.num_rows < len(rows):
            return _headers_per_message(blocks)
    offsets = pa.array(np.concatenate(([0], np.cumsum(counts))).astype(np.int32))
    items = pa.ListArray.from_arrays(pa.array(np.arange(len(values) + 1, dtype=np.int32)), values)
    return pa.MapArray.from_arrays(offsets, names, items, type=HEADERS_TYPE, mask=pa.array(counts == 0))


Lines = tuple["np.ndarray[Any, np.dtype[np.int64]]", pa.Array, pa.Array]  # block of each, names, values


def _any_lines(text: pa.Array) -> Lines:
    """Every block's `Name: value` lines (untrimmed), with Arrow string kernels; any block."""
    # one list entry per `Name: value` line; each block's first line is its status line
    lines = pc.split_pattern(text, "\r\n")
    flat = pc.list_flatten(lines)
    keep = pc.match_substring(flat, ":").to_numpy(zero_copy_only=False)
    keep[np.asarray(lines.offsets)[:-1]] = False  # every list has a first entry ("" splits to [""])
    entries = pc.split_pattern(pc.filter(flat, pa.array(keep)), ":", max_splits=1)
    rows = pc.list_parent_indices(lines).to_numpy()[keep]
    return rows, pc.list_element(entries, 0), pc.list_element(entries, 1)


def _one_line_each(text: pa.Array) -> Lines | None:
    """`_any_lines` when every block is plain with one `Name: value` line (a message id, say),
    from where the CRLFs and colons are in the array's one data buffer: numpy passes over the
    header bytes, no string kernels. None for any other blocks."""
    offsets = np.frombuffer(text.buffers()[1], np.int32)[text.offset : text.offset + len(text) + 1].astype(np.int64)
    data = text.buffers()[2]
    d = np.frombuffer(data, np.uint8)[: offsets[-1]]
    present = np.flatnonzero(offsets[1:] > offsets[:-1])
    found = BytePositions(d)
    cr = found.of(13)
    crlf = cr[d.take(cr + 1, mode="clip") == 10]
    if len(crlf) != 3 * len(present):
        return None
    # three CRLFs a block, in order: its status line's, its one line's, its blank line's
    status, line_end, blank = crlf.reshape(-1, 3).T
    ends = offsets[present + 1]
    if not (
        np.array_equal(status, offsets[present] + 8)
        and np.array_equal(line_end, ends - 4)
        and np.array_equal(blank, ends - 2)
    ):
        return None
    start = status + 2
    colons = found.of(58)
    if len(colons) != len(start):  # not one a line: each line's first, if it has one
        if not len(colons):
            return None
        colons = colons.take(np.searchsorted(colons, start), mode="clip")
    if not np.all((colons >= start) & (colons < line_end)):
        return None  # a line without a colon (no header)
    # name, colon, value, what lies before the next line (cut at ASCII bytes: valid UTF-8)
    piece = _pieces(data, [start, colons, colons + 1, line_end], text=True)
    return present, piece(0), piece(2)


def _headers_per_message(blocks: Sequence[bytes] | pa.Array) -> pa.Array:
    values = blocks.to_pylist() if isinstance(blocks, pa.Array) else blocks
    return pa.array([headers_value(b) for b in values], type=HEADERS_TYPE)


def chunk_to_batch(chunk: Chunk | RawChunk, stream: str, schema: pa.Schema) -> pa.RecordBatch:
    """One record batch of `schema` for the chunk's messages."""
    want_headers = "headers" in schema.names
    if isinstance(chunk, RawChunk):
        subjects, payloads, blocks, seqs, ts_ns = _raw_columns(chunk, want_headers)
    else:
        subjects, payloads, blocks, seqs, ts_ns = _list_columns(chunk, want_headers)
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


# the parts of a frame `_raw_columns` cuts `buf` at, in the order they appear
_CUTS = ("subject", "subject_end", "body", "payload", "end")
_SUBJECT, _BLOCK, _PAYLOAD = 0, 2, 3  # the pieces between those cuts that are columns


def _any_headers(index: FrameIndex) -> bool:
    return bool(np.any(index.field("payload") > index.field("body")))


def _pieces(buf: Any, cuts: Sequence[npt.NDArray[np.int64]], text: bool = False) -> Callable[[int], pa.Array]:
    """Cut `buf` at `cuts` (arrays of positions of one length: for each i, `cuts[0][i]`,
    `cuts[1][i]`, ... in order through `buf`, and before the next i's): `piece(j)` is the array of
    the `buf[cuts[j][i] : cuts[j + 1][i]]`, strings when `text` (cut where the bytes are valid
    UTF-8), else binary.

    The positions are the offsets of one array over `buf` whose pieces alternate between the
    values and what lies between them; `take` copies the pieces wanted into a buffer of their own.
    """
    stride, rows = len(cuts), len(cuts[0])
    large = len(buf) >= 2**31
    offsets = np.empty((rows, stride), np.int64 if large else np.int32)
    for j, positions in enumerate(cuts):
        offsets[:, j] = positions
    kind = (pa.large_string() if large else pa.string()) if text else (pa.large_binary() if large else pa.binary())
    pieces = pa.Array.from_buffers(kind, offsets.size - 1, [None, pa.py_buffer(offsets), pa.py_buffer(buf)])

    def piece(j: int) -> pa.Array:
        values = pc.take(pieces, pa.array(np.arange(j, stride * rows, stride, dtype=np.int64)))
        return values.cast(pa.string() if text else pa.binary()) if large else values

    return piece


def _raw_columns(raw: RawChunk, want_headers: bool) -> Columns:
    """Columns of a raw chunk from its index, with no work per message in Python: its values
    cut from `buf` at the frames' positions (subject, its end, body, payload, payload end;
    `_pieces`). Sequences and timestamps are the index's arrays.
    """
    index, n = raw.index, len(raw)
    if not n:
        empty = pa.array([], pa.binary())
        return empty.cast(pa.string()), empty, None, pa.array([], pa.int64()), pa.array([], pa.int64())
    column = _pieces(raw.buf, [index.field(name) for name in _CUTS])
    has_blocks = want_headers and raw.with_headers and _any_headers(index)
    return (
        column(_SUBJECT).cast(pa.string()),
        column(_PAYLOAD),
        column(_BLOCK) if has_blocks else None,
        pa.array(index.field("seq")),
        pa.array(index.field("ts_ns")),
    )
