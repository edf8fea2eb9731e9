"""Deterministic `Nats-Msg-Id`s for the rows a sink task publishes.

The stream's dedup window drops a message whose id it has seen, so exactly-
once needs ids that a retried task or a replayed micro-batch reproduces for
the same rows, whatever order the rows come in. The mode (`msgIdMode`,
resolved in schema.py) is explicit:

- `column`: the `msg_id` column, as given (non-empty, no line breaks).
- `content`: `<prefix><scope>:<partition>:<digest>:<k>`. `digest` is a
  96-bit BLAKE2b hash (16 characters of base64: never a colon) of what the row
  publishes (subject, the header lines the sink copies, data), `k` the number
  of identical rows before it in the task. With `msgIdColumns` the digest
  hashes those columns' values instead and the partition is left out:
  `<prefix><scope>:<digest>:<k>`.
- `source`: `<prefix><msgIdScope>:<stream>:<seq>:<k>` from the source
  coordinates; `k` counts the rows of one source message in the task. A row
  with a null coordinate gets its content id instead.

The scope (see `id_scope`) is the sink's identity plus, inside a streaming
query, `<query id>:<batch id>` (the checkpointed query id and the
micro-batch id, task local properties, see spark_internals.py).

Why this survives a shuffle: a retried task, or a micro-batch replayed after
a crash, receives the same multiset of rows in the same partition whenever
the rows' partition is a function of the input (narrow transformations of a
deterministic source, hash partitioning by `repartition(col)`, joins and
aggregations; Spark turns adaptive execution off in streaming queries).
Counting identical rows makes the set of ids independent of the order in
which they arrive. Bounds (docs/exactly-once.md states them): non-deterministic content
(`rand()`, `current_timestamp()`) gives new ids; without msgIdColumns a row
moved to another partition (a changed number of partitions between the
attempts) gets a new id; with msgIdColumns, rows with equal values in one
scope collapse into one message unless they share a task.
"""

from __future__ import annotations

import hashlib
from binascii import b2a_base64
from collections.abc import Callable, Sequence

from spark_jetstream.spark_internals import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY

DIGEST_BYTES = 12  # 96 bits: 16 base64 characters; collisions are out of reach in any window
DIGEST_CHARS = 16
BATCH_WRITE_SCOPE = "w"  # scope of a df.write outside streaming without msgIdScope


class MsgIdError(ValueError):
    """A `msg_id` value that cannot be used as a `Nats-Msg-Id`."""


def check_msg_id(value: str | None, column: str, row: int, partition: int) -> str:
    if value is None or value == "":
        raise MsgIdError(
            f"column {column!r} is {'null' if value is None else 'empty'} in row {row} of "
            f"partition {partition}; every row needs a message id (drop the column to derive ids)"
        )
    if "\r" in value or "\n" in value:
        raise MsgIdError(
            f"column {column!r} holds a line break in row {row} of partition {partition}: {value[:80]!r}"
        )
    return value


def streaming_scope(get_property: Callable[[str], str | None]) -> str | None:
    """`<query id>:<batch id>` from the task's local properties, or None outside a streaming query.

    A `df.write` inside `foreachBatch` runs on the query's thread and sees them too.
    """
    query_id = get_property(QUERY_ID_PROPERTY)
    batch_id = get_property(BATCH_ID_PROPERTY)
    if not query_id or batch_id is None:
        return None
    return f"{query_id}:{batch_id}"


def id_scope(mode: str, msg_id_scope: str | None, streaming: str | None) -> str:
    """The scope part of derived ids: the sink's identity, then the query and batch when streaming."""
    if mode == "source":
        assert msg_id_scope is not None  # options/write.py requires it
        return msg_id_scope
    parts = [p for p in (msg_id_scope, streaming) if p]
    return ":".join(parts) if parts else BATCH_WRITE_SCOPE


def content_digest(subject: bytes, header_lines: bytes, payload: bytes) -> str:
    """The digest of what one row publishes. Unambiguous: the subject holds no line feed and
    every header line ends in CRLF, so the lone LF after them ends the headers."""
    return content_digests([subject], [header_lines], [payload])[0]


def content_digests(
    subjects: Sequence[bytes], header_lines: Sequence[bytes], payloads: Sequence[bytes]
) -> list[str]:
    """`content_digest` of every row."""
    text = content_digest_text(subjects, header_lines, payloads).decode("ascii")
    return [text[i : i + DIGEST_CHARS] for i in range(0, len(text), DIGEST_CHARS)]


def content_digest_text(
    subjects: Sequence[bytes], header_lines: Sequence[bytes], payloads: Sequence[bytes]
) -> bytes:
    """`content_digest` of every row as one base64 text, `DIGEST_CHARS` bytes a row (one call
    per batch: the per-row cost is the hash). 12 bytes are 16 base64 characters without
    padding, so the text of the digests joined is their texts joined."""
    n = len(payloads)
    if len(subjects) != n or len(header_lines) != n:
        raise ValueError(f"{len(subjects)} subjects, {len(header_lines)} header lines, {n} payloads")
    raw: list[bytes] = []
    append = raw.append
    if n and not any(header_lines) and subjects.count(subjects[0]) == n:
        # one subject and no header lines (the `subject` option, no `headers` column): the
        # hash of what every row starts with, copied and fed the payload
        copy = hashlib.blake2b(subjects[0] + b"\n\n", digest_size=DIGEST_BYTES).copy
        for p in payloads:
            h = copy()
            h.update(p)
            append(h.digest())
    else:
        copy = hashlib.blake2b(digest_size=DIGEST_BYTES).copy  # cheaper than a new hasher a row
        for s, hl, p in zip(subjects, header_lines, payloads, strict=True):
            h = copy()
            h.update(s + b"\n" + hl + b"\n" + p)
            append(h.digest())
    return b2a_base64(b"".join(raw), newline=False)


def _canonical(value: object) -> bytes:
    """A value's bytes, framed with its kind and length so that no two values share them."""
    if value is None:
        return b"N"
    if isinstance(value, bytes):
        return b"B%d:%b" % (len(value), value)
    if isinstance(value, str):
        data = value.encode()
        return b"S%d:%b" % (len(data), data)
    data = repr(value).encode()  # numbers, dates, decimals, lists, dicts: repr is deterministic
    return b"R%d:%b" % (len(data), data)


def values_digest(values: Sequence[object]) -> str:
    """The digest of one row's msgIdColumns values."""
    raw = hashlib.blake2b(b"".join(_canonical(v) for v in values), digest_size=DIGEST_BYTES).digest()
    return b2a_base64(raw, newline=False).decode()


class MsgIdGenerator:
    """Ids for one task's rows, batch after batch. Memory: one counter per distinct row."""

    __slots__ = ("_scoped", "_base", "_base_bytes", "_partition", "_row", "_digest_counts", "_source_counts")

    def __init__(self, prefix: str, scope: str, partition_id: int, *, with_partition: bool = True) -> None:
        self._scoped = f"{prefix}{scope}:"
        self._base = f"{self._scoped}{partition_id}:" if with_partition else self._scoped
        self._base_bytes = self._base.encode()
        self._partition = partition_id
        self._row = 0
        self._digest_counts: dict[bytes, int] = {}  # digest (base64) -> rows seen so far
        # source stream -> seq -> rows seen so far for that source message
        self._source_counts: dict[str, dict[int, int]] = {}

    @property
    def rows(self) -> int:
        return self._row

    def from_column(self, values: Sequence[str | None], column: str) -> list[str]:
        start = self._row
        self._row += len(values)
        part = self._partition
        out = list(values)
        for i, value in enumerate(out):
            if not value or "\r" in value or "\n" in value:
                check_msg_id(value, column, start + i, part)
        return out  # type: ignore[return-value]

    def from_digests(self, digests: Sequence[str]) -> list[str]:
        text = "".join(digests).encode()
        if len(text) != DIGEST_CHARS * len(digests):
            raise ValueError(f"digests of {DIGEST_CHARS} ASCII characters expected, got {digests[:3]!r}...")
        return [m.decode() for m in self.from_digest_text(text)]

    def from_digest_text(self, text: bytes, before: bytes = b"", after: bytes = b"") -> list[bytes]:
        """The ids (UTF-8) of rows whose digests are `text`, `DIGEST_CHARS` bytes each; each
        id between `before` and `after` (a header block made in the id's concatenation)."""
        size = DIGEST_CHARS
        digests = [text[i : i + size] for i in range(0, len(text), size)]
        self._row += len(digests)
        base = before + self._base_bytes
        counts = self._digest_counts
        fresh = dict.fromkeys(digests, 1)
        if len(fresh) == len(digests) and fresh.keys().isdisjoint(counts.keys()):  # the smaller one is walked
            counts.update(fresh)  # every row the first of its content (the usual case): k = 0
            end = b":0" + after
            return [base + d + end for d in digests]
        out: list[bytes] = []
        append = out.append
        for d in digests:
            k = counts.get(d, 0)
            counts[d] = k + 1
            append(b"%b%b:%d%b" % (base, d, k, after))
        return out

    def from_source(
        self,
        streams: Sequence[str | None],
        seqs: Sequence[int | None],
        fallback: Callable[[int], str],
    ) -> list[str]:
        """Source ids; `fallback(i)` gives the digest of row i when its coordinates are null."""
        scoped = self._scoped
        self._row += len(seqs)
        out: list[str] = []
        append = out.append
        counts_by_stream = self._source_counts
        last_stream: str | None = None
        counts: dict[int, int] | None = None
        for i, (stream, seq) in enumerate(zip(streams, seqs, strict=True)):
            if stream is None or seq is None:
                d = fallback(i)
                key = d.encode()
                k = self._digest_counts.get(key, 0)
                self._digest_counts[key] = k + 1
                append(f"{self._base}{d}:{k}")
                continue
            if counts is None or stream != last_stream:
                counts = counts_by_stream.get(stream)
                if counts is None:
                    counts = counts_by_stream[stream] = {}
                last_stream = stream
            k = counts.get(seq, 0)
            counts[seq] = k + 1
            append(f"{scoped}{stream}:{seq}:{k}")
        return out
