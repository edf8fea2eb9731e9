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
`Nats-Expected-Stream` when the `stream` option is set. `Nats-Expected-*`
headers in the `headers` column are dropped: they are instructions to the
server at publish time, and rows read from a stream carry the ones their
original publisher sent, which would fail (or wrongly constrain) the copy.
Every other header is published as given, in map order, one line per value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from spark_jetstream.client import LeanConnection, lease
from spark_jetstream.options import ConnectionOptions, WriteOptions
from spark_jetstream.write.msg_ids import MsgIdGenerator
from spark_jetstream.write.publisher import Publisher, PublishStats
from spark_jetstream.write.schema import WriteColumns

log = logging.getLogger(__name__)

VERSION_LINE = b"NATS/1.0\r\n"
_SKIPPED_HEADERS = frozenset({"nats-msg-id"})
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


def summarize(messages: list[WriterCommitMessage | None]) -> dict[str, int]:
    """Totals of the tasks' commit messages (for the driver's commit/abort log line)."""
    totals = {"tasks": 0, "rows": 0, "published": 0, "duplicates": 0, "reconnects": 0}
    for m in messages:
        if isinstance(m, JetStreamCommitMessage):
            totals["tasks"] += 1
            totals["rows"] += m.rows
            totals["published"] += m.published
            totals["duplicates"] += m.duplicates
            totals["reconnects"] += m.reconnects
    return totals


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
    skip: frozenset[str],
    column: str,
    row: int,
    partition_id: int,
) -> bytes:
    if not entries:
        return b""
    lines: list[str] = []
    for name, value in entries:
        lowered = name.lower()
        if lowered in skip or lowered.startswith("nats-expected-"):
            continue
        if not name or any(c in _BAD_NAME_CHARS for c in name):
            raise RowValueError(
                f"column {column!r}: header name {name!r} in row {row} of partition {partition_id} "
                "is empty or holds a space, colon or line break"
            )
        values = value if multi else [value]
        if values is None:
            continue
        for v in values:  # type: ignore[attr-defined,union-attr]
            if v is None:
                continue
            if "\r" in v or "\n" in v:
                raise RowValueError(
                    f"column {column!r}: header {name!r} in row {row} of partition {partition_id} "
                    "holds a line break"
                )
            lines.append(f"{name}: {v}\r\n")
    return "".join(lines).encode()


def publish_batches(
    options: WriteOptions,
    columns: WriteColumns,
    batches: Iterator[pa.RecordBatch],
    scope: str,
    partition_id: int,
    connect: Callable[[ConnectionOptions], LeanConnection] = lease,
) -> JetStreamCommitMessage:
    """Publish every row of `batches`; return once all are acked."""
    ids = MsgIdGenerator(options.msg_id_prefix, scope, partition_id)
    expected = b""
    skip = _SKIPPED_HEADERS
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
            data_col = batch.column(columns.data)
            if columns.data_is_string:
                payloads = [b"" if v is None else v.encode() for v in data_col.to_pylist()]
            else:
                payloads = [b"" if v is None else v for v in data_col.to_pylist()]
            # subjects
            if option_subject is not None:
                subjects = [option_subject] * n
            else:
                assert columns.subject is not None
                raw = batch.column(columns.subject).to_pylist()
                subjects = [encode_subject(s, first_row + i) for i, s in enumerate(raw)]
            # message ids
            if columns.msg_id is not None:
                msg_ids = ids.from_column(batch.column(columns.msg_id).to_pylist(), columns.msg_id)
            elif columns.has_source_coordinates:
                assert columns.source_stream is not None and columns.source_seq is not None
                msg_ids = ids.from_source(
                    batch.column(columns.source_stream).to_pylist(),
                    batch.column(columns.source_seq).to_pylist(),
                )
            else:
                msg_ids = ids.positional(n)
            # header blocks
            if columns.headers is None:
                tail = b"\r\n" + expected + b"\r\n"
                hdrs = [b"NATS/1.0\r\nNats-Msg-Id: " + m.encode() + tail for m in msg_ids]
            else:
                maps = batch.column(columns.headers).to_pylist()
                hcol = columns.headers
                multi = columns.headers_multi
                hdrs = [
                    b"NATS/1.0\r\nNats-Msg-Id: "
                    + m.encode()
                    + b"\r\n"
                    + expected
                    + _header_lines(entries, multi, skip, hcol, first_row + i, partition_id)
                    + b"\r\n"
                    for i, (m, entries) in enumerate(zip(msg_ids, maps, strict=True))
                ]
            publisher.publish_many(subjects, hdrs, payloads)
            rows += n
        stats = publisher.flush() if publisher is not None else PublishStats()
    finally:
        if publisher is not None:
            publisher.close()
    log.info(
        "jetstream sink partition %d: %d rows, %d stored, %d duplicates, %d reconnects",
        partition_id,
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
    )
