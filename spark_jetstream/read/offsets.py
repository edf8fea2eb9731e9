"""Offsets of the `jetstream` source and how the driver computes them.

An offset maps each stream to a sequence N: every message of that stream up
to and including N (after the subject filter) is processed. It is what Spark
stores in the checkpoint. A micro-batch covers (start[S], end[S]] of each
stream S.

This module holds the offset value type, the stream state the driver reads
from the server (`STREAM.INFO`), time -> sequence resolution, where a read
starts and ends (`resolve_start`, `resolve_end`), the data-loss error, and the
pure read-limit arithmetic `cap_end`. Invariants: `cap_end` never returns less
than `start` nor more than the target; a count limit never admits more
sequences than the limit; a byte limit is estimated from the stream's average
stored message size and always admits at least one sequence.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_jetstream.client import ErrorCode, JetStreamApiError, LeanConnection
from spark_jetstream.client.frames import ACK_PREFIX
from spark_jetstream.options import ReadOptions


class OffsetError(ValueError):
    """A checkpointed offset that does not fit this source."""


@dataclass(frozen=True, slots=True)
class Offset:
    """Per stream, the last stream sequence processed; `owner` marks the query (durable).

    JSON: `{"streams": {"A": 12, "B": 40}}`, plus `"owner": "<hex>"` when the
    query mirrors its progress into durable consumers. The offset of
    checkpoints written before several streams were supported,
    `{"stream": "A", "seq": 12}`, is read as `{"streams": {"A": 12}}`.

    A stream that is not in an offset has no resolved start yet. Where Spark
    passes the batch's start to `latestOffset` (4.2+), the batch that ends at
    the first offset naming it reads nothing of it (stream_reader.py), so that
    Spark's offset log records the start. Before 4.2 that first batch would be
    the whole `availableNow` run, so the offset records the start itself:
    `"starts": {"A": 10}` (legacy_stream_reader.py), the sequence the query
    started after on each stream, kept in every later offset (the JSON of an
    unchanged position stays the same); a batch whose start offset lacks a
    stream starts there.

    Reading through a consumer (option `consumer`), `"counts": {"A": 250}`
    is how many messages the batch that ends at this offset holds: a replay
    after a crash pulls them again and knows when it has them all, or how
    many the stream lost meanwhile (consumer_feed.py); `"filter": ["a.>"]`
    is the consumer's filter (`[]`: none), which a later run must find
    unchanged (consumer_check.refuse_changed_filter).
    """

    seqs: tuple[tuple[str, int], ...] = ()
    owner: str | None = None
    starts: tuple[tuple[str, int], ...] = ()
    counts: tuple[tuple[str, int], ...] = ()
    filters: tuple[str, ...] | None = None  # option consumer: the consumer's filter

    @classmethod
    def of(
        cls,
        seqs: Mapping[str, int],
        owner: str | None = None,
        starts: Mapping[str, int] | None = None,
        counts: Mapping[str, int] | None = None,
        filters: Sequence[str] | None = None,
    ) -> Offset:
        return cls(
            tuple(sorted(seqs.items())), owner, tuple(sorted((starts or {}).items())),
            tuple(sorted((counts or {}).items())), None if filters is None else tuple(sorted(filters)),
        )

    def as_map(self) -> dict[str, int]:
        return dict(self.seqs)

    def get(self, stream: str) -> int | None:
        return self.as_map().get(stream)

    def start_of(self, stream: str) -> int | None:
        """The recorded start of `stream` (offsets of the pre-4.2 path), or None."""
        return dict(self.starts).get(stream)

    def count_of(self, stream: str) -> int | None:
        """How many messages of `stream` the batch ending here holds (option consumer), or None."""
        return dict(self.counts).get(stream)

    def to_dict(self) -> dict[str, Any]:
        value: dict[str, Any] = {"streams": self.as_map()}
        if self.owner:
            value["owner"] = self.owner
        if self.starts:
            value["starts"] = dict(self.starts)
        if self.counts:
            value["counts"] = dict(self.counts)
        if self.filters is not None:
            value["filter"] = list(self.filters)
        return value

    def json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | str, expected_streams: Sequence[str] | None = None) -> Offset:
        data = json.loads(value) if isinstance(value, str) else value
        try:
            if isinstance(data, Mapping) and "streams" in data:
                raw = data["streams"]
                if not isinstance(raw, Mapping):
                    raise TypeError
                seqs = {str(k): int(v) for k, v in raw.items()}
                owner = data.get("owner")
                owner = None if owner is None else str(owner)
                raw_starts = data.get("starts") or {}
                if not isinstance(raw_starts, Mapping):
                    raise TypeError
                starts = {str(k): int(v) for k, v in raw_starts.items()}
                raw_counts = data.get("counts") or {}
                if not isinstance(raw_counts, Mapping):
                    raise TypeError
                counts = {str(k): int(v) for k, v in raw_counts.items()}
                raw_filters = data.get("filter")
                if raw_filters is not None and (isinstance(raw_filters, str) or not isinstance(raw_filters, Sequence)):
                    raise TypeError
                filters = None if raw_filters is None else [str(f) for f in raw_filters]
            else:
                seqs, owner, starts, counts = {str(data["stream"]): int(data["seq"])}, None, {}, {}
                filters = None
        except (KeyError, TypeError, ValueError):
            raise OffsetError(
                f"not a jetstream offset (expected {{'streams': {{S: N, ...}}}}): {data!r}"
            ) from None
        for stream, seq in (*seqs.items(), *starts.items(), *counts.items()):
            if seq < 0:
                raise OffsetError(f"offset sequence of stream {stream!r} must be >= 0: {data!r}")
        if expected_streams is not None and seqs and not set(seqs) & set(expected_streams):
            held = ", ".join(repr(s) for s in sorted(seqs))
            wanted = ", ".join(repr(s) for s in expected_streams)
            raise OffsetError(
                f"the checkpoint holds an offset of stream {held} but option stream is {wanted}; "
                "use a new checkpoint location to read another stream"
            )
        return cls.of(seqs, owner, starts, counts, filters)


@dataclass(frozen=True, slots=True)
class StreamState:
    """The part of `STREAM.INFO` the source needs."""

    stream: str
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    retention: str = "limits"
    allow_direct: bool = False

    @property
    def avg_msg_bytes(self) -> int:
        return max(1, self.bytes // self.messages) if self.messages else 256

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> StreamState:
        state = info.get("state", {})
        config = info.get("config", {})
        return cls(
            stream=str(config.get("name", "")),
            messages=int(state.get("messages", 0)),
            bytes=int(state.get("bytes", 0)),
            first_seq=int(state.get("first_seq", 0)),
            last_seq=int(state.get("last_seq", 0)),
            retention=str(config.get("retention", "limits")),
            allow_direct=bool(config.get("allow_direct", False)),
        )


class StreamMissingError(LookupError):
    """The stream does not exist (never created, or deleted)."""


class StartPastEndError(ValueError):
    """startingTimestamp is past the stream's last message (strategy `error`)."""


def _iso(ts_ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


class DataLossError(RuntimeError):
    """Messages the query must read are no longer in the stream."""


def data_loss_message(stream: str, lo: int, hi: int, why: str) -> str:
    return (
        f"data loss on stream {stream!r}: messages with sequences {lo}..{hi} are gone ({why}) "
        "and were never read; set option failOnDataLoss=false to skip them"
    )


def stream_state(conn: LeanConnection, stream: str) -> StreamState:
    try:
        info = conn.js_api(f"STREAM.INFO.{stream}")
    except JetStreamApiError as exc:
        if exc.err_code == ErrorCode.STREAM_NOT_FOUND:
            raise StreamMissingError(f"stream {stream!r} not found on {conn.server_url}") from None
        raise
    return StreamState.from_info(info)


def first_seq_at_or_after(conn: LeanConnection, state: StreamState, ts_ms: int) -> int:
    """The first stream sequence stored at or after `ts_ms`; last_seq + 1 if there is none.

    Asks the server with a short-lived ephemeral consumer (deliver policy
    by_start_time) and one no-wait pull of a single message.
    """
    from datetime import datetime, timezone

    name = "sjt_" + secrets.token_hex(8)
    start_time = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    config = {
        "name": name,
        "deliver_policy": "by_start_time",
        "opt_start_time": start_time,
        "ack_policy": "none",
        "mem_storage": True,
        "inactive_threshold": 10_000_000_000,
        "num_replicas": 1,
    }
    stream = state.stream
    created = conn.js_api(
        f"CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": config, "action": "create"}
    )
    try:
        if int(created.get("num_pending", 0)) == 0:
            return state.last_seq + 1
        _, _, seq = _next_one(conn, stream, name)
        return seq if seq is not None else state.last_seq + 1
    finally:
        conn.js_api(f"CONSUMER.DELETE.{stream}.{name}")


def _next_one(conn: LeanConnection, stream: str, name: str) -> tuple[bytes, bytes, int | None]:
    """Pull one message (no wait): (header_bytes, payload, stream_seq), or seq None when there is none."""
    inbox = conn.new_inbox()
    sid = conn.subscribe(inbox)
    try:
        conn.publish(
            conn.api_subject(f"CONSUMER.MSG.NEXT.{stream}.{name}"),
            json.dumps({"batch": 1, "no_wait": True}).encode(),
            reply=inbox,
        )
        frame = conn.wait_for_sid(sid)
    finally:
        conn.unsubscribe(sid)
    # a message carries its ack subject as reply; a status (404/408) has none
    if frame[3].startswith(ACK_PREFIX):
        tokens = frame[3].split(b".")
        seq_index = -4 if len(tokens) in (9, 11) else -5
        return frame[4], frame[5], int(tokens[seq_index])
    return frame[4], b"", None


def seq_for_time(conn: LeanConnection, options: ReadOptions, state: StreamState, ts_ms: int) -> int:
    """The first sequence stored at or after `ts_ms` (last_seq + 1: none), the way `readMode` allows."""
    if options.read_mode == "direct":
        from spark_jetstream.read.direct_get import seq_at_time

        return seq_at_time(conn, state.stream, ts_ms, state.last_seq, state.allow_direct)
    return first_seq_at_or_after(conn, state, ts_ms)


def resolve_start(conn: LeanConnection, options: ReadOptions, state: StreamState) -> int:
    """The offset (last processed sequence) a read starts after, from the starting options."""
    ts_ms = options.start_timestamp_ms(state.stream)
    if ts_ms is not None:
        seq = seq_for_time(conn, options, state, ts_ms)
        if seq > state.last_seq and options.timestamp_strategy == "error":
            by_stream = state.stream in dict(options.starting_ts_by_stream)
            option = "startingOffsetsByTimestamp" if by_stream else "startingTimestamp"
            raise StartPastEndError(
                f"no message of stream {state.stream!r} is stored at or after {option} "
                f"{_iso(ts_ms)}; set option startingOffsetsByTimestampStrategy=latest "
                "to start at the end of the stream instead"
            )
        return seq - 1
    starting = options.start_position(state.stream)
    if starting == "earliest":
        return max(0, state.first_seq - 1)
    if starting == "latest":
        return state.last_seq
    return int(starting) - 1


def resolve_end(conn: LeanConnection, options: ReadOptions, state: StreamState) -> int:
    """The last sequence a batch read covers, from the ending options."""
    if options.ending_timestamp_ms is not None:
        return seq_for_time(conn, options, state, options.ending_timestamp_ms) - 1
    ending = options.end_position(state.stream)
    if ending == "latest":
        return state.last_seq
    return min(int(ending), state.last_seq)


def cap_end(
    start: int,
    target: int,
    *,
    max_messages: int | None,
    max_bytes: int | None,
    avg_msg_bytes: int,
) -> int:
    """The end sequence of the next micro-batch under a count and a byte limit."""
    end = max(start, target)
    if max_messages is not None:
        end = min(end, start + max_messages)
    if max_bytes is not None:
        end = min(end, start + max(1, max_bytes // max(1, avg_msg_bytes)))
    return max(start, end)


def split_budget(budget: int, backlogs: Mapping[str, int]) -> dict[str, int]:
    """A per-trigger budget shared by streams in proportion to their backlogs.

    Every stream gets its whole backlog when they fit; otherwise shares are
    proportional (rounded down, the rest to the largest backlogs), never more
    than a stream's backlog, summing to the budget, and at least one for the
    largest backlog so that every trigger makes progress.
    """
    total = sum(max(0, b) for b in backlogs.values())
    if total <= budget:
        return {s: max(0, b) for s, b in backlogs.items()}
    shares = {s: max(0, b) * budget // total for s, b in backlogs.items()}
    rest = budget - sum(shares.values())
    for s in sorted(backlogs, key=lambda k: (-backlogs[k], k)):
        if rest <= 0:
            break
        if shares[s] < backlogs[s]:
            shares[s] += 1
            rest -= 1
    return shares
