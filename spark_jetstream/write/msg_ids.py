"""Deterministic `Nats-Msg-Id`s for the rows a sink task publishes.

The stream's dedup window drops a message whose id it has seen, so exactly-
once needs ids that a retried task or a replayed micro-batch reproduces. In
order of preference, a row's id is:
1. its `msg_id` column, as given (must be non-empty, no line breaks);
2. `<prefix><stream>:<seq>:<k>` when the row carries its source coordinates
   (`stream`, `seq` from the jetstream source): k is the occurrence index of
   that source message among the task's rows, so a transformation emitting
   several rows per input message keeps every one of them;
3. `<prefix><scope>:<partition>:<row>`: scope is `<query id>:<batch id>` in a
   streaming query (the checkpointed query id, stable across restarts, and the
   micro-batch id, both task local properties, see spark_internals.py) or a
   write id made once on the driver for a batch `df.write`; row is the row's
   index in the task.
Rows without source coordinates (null stream or seq) fall back to 3.

Determinism of 2 and 3 assumes the input of the task is deterministic (the
jetstream source replays exactly the same range). 2 assumes every row derived
from one source message lands in the same task, in a stable order: true for
narrow transformations (select, filter, explode, mapInArrow); a repartition
that spreads one message's rows over several tasks would give two rows the
same id (the second dropped as a duplicate) — give such rows a `msg_id`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from spark_jetstream.spark_internals import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY


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


def streaming_scope(get_property: Callable[[str], str | None]) -> str:
    """`<query id>:<batch id>` from the task's local properties (`TaskContext.getLocalProperty`)."""
    query_id = get_property(QUERY_ID_PROPERTY)
    batch_id = get_property(BATCH_ID_PROPERTY)
    if not query_id or batch_id is None:
        raise RuntimeError(
            "the jetstream stream sink runs outside a streaming query: the task local properties "
            f"{QUERY_ID_PROPERTY} / {BATCH_ID_PROPERTY} are missing"
        )
    return f"{query_id}:{batch_id}"


class MsgIdGenerator:
    """Ids for one task's rows, batch after batch, in row order."""

    __slots__ = ("_prefix", "_positional", "_row", "_partition", "_counts")

    def __init__(self, prefix: str, scope: str, partition_id: int) -> None:
        self._prefix = prefix
        self._positional = f"{prefix}{scope}:{partition_id}:"
        self._partition = partition_id
        self._row = 0
        # source stream -> seq -> rows seen so far for that source message
        self._counts: dict[str | None, dict[int, int]] = {}

    @property
    def rows(self) -> int:
        return self._row

    def positional(self, n: int) -> list[str]:
        base = self._positional
        start = self._row
        self._row += n
        return [f"{base}{i}" for i in range(start, start + n)]

    def from_column(self, values: Sequence[str | None], column: str) -> list[str]:
        start = self._row
        self._row += len(values)
        part = self._partition
        out = list(values)
        for i, value in enumerate(out):
            if not value or "\r" in value or "\n" in value:
                check_msg_id(value, column, start + i, part)
        return out  # type: ignore[return-value]

    def from_source(self, streams: Sequence[str | None], seqs: Sequence[int | None]) -> list[str]:
        prefix = self._prefix
        base = self._positional
        row = self._row
        self._row += len(seqs)
        out: list[str] = []
        append = out.append
        counts_by_stream = self._counts
        last_stream: str | None = None
        counts: dict[int, int] | None = None
        for stream, seq in zip(streams, seqs, strict=True):
            if stream is None or seq is None:
                append(f"{base}{row}")
                row += 1
                continue
            if counts is None or stream != last_stream:
                counts = counts_by_stream.get(stream)
                if counts is None:
                    counts = counts_by_stream[stream] = {}
                last_stream = stream
            k = counts.get(seq, 0)
            counts[seq] = k + 1
            append(f"{prefix}{stream}:{seq}:{k}")
            row += 1
        return out
