"""One sink task on an executor: Arrow record batches in, acked JetStream messages out.

Shared by the batch writer (batch_writer.py) and the stream writer
(stream_writer.py). Works column-wise on each `pyarrow.RecordBatch` (no Row
objects): builds subjects, header blocks (with the row's deterministic
`Nats-Msg-Id`, see msg_ids.py) and payloads as lists and hands them to the
pipelined `Publisher`. Returns a `JetStreamCommitMessage` only after every
message is acked; any bad value (null subject, header with a line break) or
server error raises, which fails the task.

Header rules: the sink sets `Nats-Msg-Id` itself (a `Nats-Msg-Id` in the
`headers` column is replaced; use the `msg_id` column to choose ids) and
`Nats-Expected-Stream` when the `stream` option is set. Every other `Nats-*`
header in the `headers` column is dropped unless `keepNatsHeaders` names it:
they are directives to the server (`Nats-Rollup` purges the subject,
`Nats-TTL` fails on a stream without per-message TTLs, `Nats-Expected-*`
constrain the publish) or the server's own annotations, and rows read from a
stream carry the ones their original publisher or server set. Every other
header is published as given, in map order, one line per value.

The commit message reports, besides counts, the streams the pub acks named
(the driver checks their dedup windows, dedup_check.py) and the task's
attempt number (duplicates in a first attempt hint at colliding ids).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import WriterCommitMessage

from spark_jetstream.client import LeanConnection, lease
from spark_jetstream.client.frames import CRLF
from spark_jetstream.options import ConnectionOptions, WriteOptions
from spark_jetstream.write.msg_ids import (
    MsgIdGenerator,
    content_digest,
    content_digest_text,
    values_digest,
)
from spark_jetstream.write.publisher import Publisher, PublishStats
from spark_jetstream.write.schema import WriteColumns

log = logging.getLogger(__name__)

VERSION_LINE = b"NATS/1.0\r\n"
ID_LINE = VERSION_LINE + b"Nats-Msg-Id: "  # every header block opens with the row's id
_BAD_NAME_CHARS = frozenset(" \t\r\n:")


class RowValueError(ValueError):
    """A value in a row cannot be published; the text names the column and row."""


@dataclass
class JetStreamCommitMessage(WriterCommitMessage):
    partition_id: int
    rows: int
    published: int
    duplicates: int
    reconnects: int
    streams: tuple[str, ...] = ()  # the streams the pub acks named
    attempt: int = 0  # the task's attempt number (TaskContext.attemptNumber)
    resent_duplicates: int = 0  # duplicates of frames the task sent more than once (its own copies)


def summarize(messages: list[WriterCommitMessage | None]) -> dict[str, int]:
    """Totals of the tasks' commit messages (for the driver's commit/abort log line).

    `first_attempt_duplicates`: duplicates acked to first task attempts. Expected
    in a micro-batch replayed after a restart; anywhere else they mean that ids
    collide (two writers sharing a scope, or msgIdColumns that do not identify rows).
    """
    totals = {"tasks": 0, "rows": 0, "published": 0, "duplicates": 0, "first_attempt_duplicates": 0,
              "reconnects": 0}
    for m in messages:
        if isinstance(m, JetStreamCommitMessage):
            totals["tasks"] += 1
            totals["rows"] += m.rows
            totals["published"] += m.published
            totals["duplicates"] += m.duplicates
            totals["reconnects"] += m.reconnects
            if m.attempt == 0:  # a frame's own earlier copy (re-sent after silence) is no collision
                totals["first_attempt_duplicates"] += m.duplicates - m.resent_duplicates
    return totals


def acked_streams(messages: list[WriterCommitMessage | None]) -> set[str]:
    """Every stream named by the pub acks of the tasks."""
    return {s for m in messages if isinstance(m, JetStreamCommitMessage) for s in m.streams}


def _subject_encoder(column: str, partition_id: int) -> Callable[[str | None, int], bytes]:
    cache: dict[str, bytes] = {}

    def encode(subject: str | None, row: int) -> bytes:
        if subject is None:
            raise RowValueError(
                f"column {column!r} is null in row {row} of partition {partition_id} "
                "and no 'subject' option is set"
            )
        hit = cache.get(subject)
        if hit is not None:
            return hit
        tokens = subject.split(".")
        if not subject or any(t == "" for t in tokens) or any(
            c in subject for c in " \t\r\n*>"
        ):
            raise RowValueError(
                f"column {column!r} holds {subject!r} in row {row} of partition {partition_id}: "
                "not a subject to publish to (no spaces, wildcards * > or empty tokens)"
            )
        encoded = subject.encode()
        cache[subject] = encoded
        return encoded

    return encode


def _header_lines(
    entries: Iterable[tuple[str, object]] | None,
    multi: bool,
    keep: frozenset[str],
    column: str,
    row: int,
    partition_id: int,
) -> bytes:
    if not entries:
        return b""
    lines: list[str] = []
    for name, value in entries:
        lowered = name.lower()
        if lowered.startswith("nats-") and (lowered not in keep or lowered == "nats-msg-id"):
            continue
        if not name or any(c in _BAD_NAME_CHARS for c in name):
            raise RowValueError(
                f"column {column!r}: header name {name!r} in row {row} of partition {partition_id} "
                "is empty or holds a space, colon or line break"
            )
        values = value if multi else [value]
        if values is None:
            continue
        if not isinstance(values, (list, tuple)):
            raise RowValueError(f"column {column!r}: header {name!r} in row {row}: expected a list of values")
        for v in values:
            if v is None:
                continue
            v = str(v)
            if "\r" in v or "\n" in v:
                raise RowValueError(
                    f"column {column!r}: header {name!r} in row {row} of partition {partition_id} "
                    "holds a line break"
                )
            lines.append(f"{name}: {v}\r\n")
    return "".join(lines).encode()


def _payloads(column: pa.Array) -> list[bytes]:
    """The column's values as bytes (UTF-8 for strings: Arrow's strings are), null as empty."""
    if pa.types.is_large_string(column.type):
        column = column.cast(pa.large_binary())
    elif pa.types.is_string(column.type):
        column = column.cast(pa.binary())
    if column.null_count:
        column = pc.fill_null(column, b"")
    return column.to_pylist()  # type: ignore[no-any-return]


def _row_digest(subjects: list[bytes], lines: list[bytes], payloads: list[bytes], i: int) -> str:
    return content_digest(subjects[i], lines[i], payloads[i])


def publish_batches(
    options: WriteOptions,
    columns: WriteColumns,
    batches: Iterator[pa.RecordBatch],
    scope: str,
    partition_id: int,
    connect: Callable[[ConnectionOptions], LeanConnection] = lease,
    attempt: int = 0,
) -> JetStreamCommitMessage:
    """Publish every row of `batches` with ids scoped by `scope` (msg_ids.id_scope); return once
    all are acked."""
    mode = columns.id_mode
    by_values = bool(columns.id_columns)
    ids = MsgIdGenerator(options.msg_id_prefix, scope, partition_id, with_partition=not by_values)
    expected = b""
    keep = options.keep_nats_headers
    if options.stream is not None:
        expected = f"Nats-Expected-Stream: {options.stream}\r\n".encode()
    option_subject = options.subject.encode() if options.subject is not None else None
    encode_subject = _subject_encoder(columns.subject or "subject", partition_id)
    rows = 0
    publisher: Publisher | None = None  # connected at the first row: empty partitions cost nothing
    try:
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            if publisher is None:
                publisher = Publisher(
                    options.connection,
                    max_in_flight=options.max_in_flight,
                    ack_timeout_s=options.ack_timeout_s,
                    connect=connect,
                )
            first_row = ids.rows
            # payloads
            payloads = _payloads(batch.column(columns.data))
            # subjects
            if option_subject is not None:
                subjects = [option_subject] * n
            else:
                assert columns.subject is not None
                raw = batch.column(columns.subject).to_pylist()
                subjects = [encode_subject(s, first_row + i) for i, s in enumerate(raw)]
            # the header lines copied from the headers column (part of the content digest)
            if columns.headers is None:
                lines = [b""] * n
            else:
                maps = batch.column(columns.headers).to_pylist()
                hcol = columns.headers
                multi = columns.headers_multi
                lines = [
                    _header_lines(entries, multi, keep, hcol, first_row + i, partition_id)
                    for i, entries in enumerate(maps)
                ]
            digest = partial(_row_digest, subjects, lines, payloads)
            # header blocks: `Nats-Msg-Id: <id>`, `Nats-Expected-Stream`, the copied lines
            tail = CRLF + expected
            msg_ids: list[bytes] = []
            hdrs: list[bytes] | None = None
            if mode in ("column", "source"):
                given: list[str]
                if mode == "column":
                    assert columns.msg_id is not None
                    given = ids.from_column(batch.column(columns.msg_id).to_pylist(), columns.msg_id)
                else:
                    assert columns.source_stream is not None and columns.source_seq is not None
                    given = ids.from_source(
                        batch.column(columns.source_stream).to_pylist(),
                        batch.column(columns.source_seq).to_pylist(),
                        digest,
                    )
                msg_ids = [m.encode() for m in given]
            else:
                if by_values:
                    value_lists = [batch.column(c).to_pylist() for c in columns.id_columns]
                    text = "".join([values_digest(v) for v in zip(*value_lists, strict=True)]).encode()
                else:
                    text = content_digest_text(subjects, lines, payloads)
                if columns.headers is None:  # the whole block made in the id's concatenation
                    hdrs = ids.from_digest_text(text, ID_LINE, tail + CRLF)
                else:
                    msg_ids = ids.from_digest_text(text)
            if hdrs is None:
                hdrs = [ID_LINE + m + tail + hl + CRLF for m, hl in zip(msg_ids, lines, strict=True)]
            publisher.publish_many(subjects, hdrs, payloads)
            rows += n
        stats = publisher.flush() if publisher is not None else PublishStats()
    finally:
        if publisher is not None:
            publisher.close()
    log.info(
        "jetstream sink partition %d (attempt %d): %d rows, %d stored, %d duplicates, %d reconnects",
        partition_id,
        attempt,
        rows,
        stats.published,
        stats.duplicates,
        stats.reconnects,
    )
    return JetStreamCommitMessage(
        partition_id=partition_id,
        rows=rows,
        published=stats.published,
        duplicates=stats.duplicates,
        reconnects=stats.reconnects,
        streams=tuple(sorted(stats.streams)),
        attempt=attempt,
        resent_duplicates=stats.resent_duplicates,
    )
