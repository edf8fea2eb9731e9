"""The executor's range fetch: every message of a stream in (start, end] that matches a filter.

`fetch_range(conn, spec)` reads with an ephemeral ack-none pull consumer that
is deleted afterwards (`consumer_config`): no_wait pull requests of about
`REQUEST_BYTES` each, two in flight (read/pull_requests.py: the next goes out
while the current one has half a batch left to bring, never for more than the
rest of the range), data frames collected raw (client/msg_runs.py) and cut
at the range's end; resumed after the last message read when the server goes
away mid-read. Where no such consumer may be made (a work-queue stream) it
reads by message get (`fetch_range_by_get`, slow: one request per message).
The read-only way, without any consumer, is direct_get.py.

Deterministic: the same spec yields the same messages as long as the stream
still holds them. Used by partitions.py only; imports no pyspark and no
pyarrow.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from spark_jetstream.client import (
    ConnectionLostError,
    ErrorCode,
    JetStreamApiError,
    LeanConnection,
    NatsError,
    NatsTimeoutError,
    ReadInterruptedError,
    Status,
)
from spark_jetstream.client.errors import WORKQUEUE_CONSUMER_ERRORS
from spark_jetstream.client.frames import ACK_PREFIX, parse_frames, parse_headers
from spark_jetstream.client.msg_runs import Chunk, RawChunk, RunScanner
from spark_jetstream.client.retry import RetryBudget, breaks_connection, exhausted, is_transient
from spark_jetstream.read.filtered import count_matching
from spark_jetstream.read.pull_requests import PullRequests

__all__ = [
    "REQUEST_BYTES",
    "FetchSpec",
    "consumer_config",
    "fetch_range",
    "fetch_range_by_get",
    "rfc3339_ns",
    "subject_matches",
]

log = logging.getLogger(__name__)

REQUEST_BYTES: Final = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FetchSpec:
    """What to read: stream messages with start < seq <= end matching `filters`."""

    stream: str
    start: int
    end: int
    filters: tuple[str, ...] = ()
    with_headers: bool = True
    chunk_rows: int = 32768
    avg_msg_bytes: int = 256

    @property
    def request_batch(self) -> int:
        """Messages per pull request: ~8 MiB each, at most 1.5 requests' worth in flight (measured sweet
        spot: larger requests slow the server down).

        Bounded in bytes because the server cuts off a client whose pending
        output exceeds 64 MiB ("Slow Consumer").
        """
        per_msg = max(1, self.avg_msg_bytes) + 120  # + MSG line, ack reply subject
        return max(16, min(131072, REQUEST_BYTES // per_msg))


def consumer_config(spec: FetchSpec, name: str, inactive_threshold_ns: int = 300_000_000_000) -> dict[str, Any]:
    """The bounded read consumer: ack none, from start+1, in memory.

    The inactive threshold (5 min) outlasts a slow downstream between two pull
    requests; a consumer left behind by a killed task disappears after it.
    """
    cfg: dict[str, Any] = {
        "name": name,
        "deliver_policy": "by_start_sequence",
        "opt_start_seq": spec.start + 1,
        "ack_policy": "none",
        "replay_policy": "instant",
        "mem_storage": True,
        "num_replicas": 1,
        "inactive_threshold": inactive_threshold_ns,
        "max_waiting": 4,
    }
    if len(spec.filters) == 1:
        cfg["filter_subject"] = spec.filters[0]
    elif spec.filters:
        cfg["filter_subjects"] = list(spec.filters)
    return cfg


def fetch_range(conn: LeanConnection, spec: FetchSpec) -> Iterator[Chunk | RawChunk]:
    """Yield every message of (start, end] matching the filter, in chunks, exactly once.

    Deterministic: the same spec yields the same messages as long as the stream
    still holds them. The ephemeral consumer is deleted when done (or left to
    expire after its inactive threshold if the connection broke).

    Survives the server going away mid-read: a lost connection, a silent socket
    or a consumer that vanished (a restarted server keeps no ephemeral consumer)
    resumes after the last message yielded, on a new connection (the same object,
    `reconnect`) with a new consumer, retrying within `retryTimeout` without
    progress. Nothing is yielded twice and nothing is skipped.
    """
    if spec.end <= spec.start:
        return
    budget: RetryBudget | None = None
    part = spec
    while True:
        try:
            for chunk in _fetch_once(conn, part):
                part = replace(part, start=chunk.last_seq)
                if budget is not None:
                    budget.progressed()
                yield chunk
            return
        except (NatsError, OSError) as exc:
            if not is_transient(exc):
                raise
            budget = budget or conn.retry_budget()
            what = f"reading {spec.stream} ({part.start}, {spec.end}] from {conn.server_url or 'the server'}"
            if not budget.wait(what, exc):
                raise exhausted(ConnectionLostError(f"{what}: {conn.redact(str(exc))}; {budget.summary()}")) from exc
            if breaks_connection(exc) or isinstance(exc, NatsTimeoutError):
                conn.reconnect(budget)


def _fetch_once(conn: LeanConnection, spec: FetchSpec) -> Iterator[Chunk | RawChunk]:
    """One attempt at `fetch_range`: one read consumer (or message gets), no resuming."""
    name = "sjr_" + secrets.token_hex(8)
    try:
        created = conn.js_api(
            f"CONSUMER.CREATE.{spec.stream}.{name}",
            {"stream_name": spec.stream, "config": consumer_config(spec, name), "action": "create"},
        )
    except JetStreamApiError as exc:
        if exc.err_code not in WORKQUEUE_CONSUMER_ERRORS:
            raise
        # A work-queue stream allows no ack-none consumer and no overlapping
        # consumers (the durable owns the subjects): read by message get instead.
        log.info("stream %s refuses a read consumer (%s): reading by message get", spec.stream, exc.description)
        yield from fetch_range_by_get(conn, spec)
        return
    if int(created.get("num_pending", 1)) == 0:
        _delete_consumer(conn, spec.stream, name)
        return
    try:
        yield from _pull_range(conn, spec, name, _in_range(conn, spec, int(created.get("num_pending", 0))))
    finally:
        _delete_consumer(conn, spec.stream, name)


def _in_range(conn: LeanConnection, spec: FetchSpec, pending_from_start: int) -> int:
    """About how many messages the read consumer has to deliver: the range's sequences, or, with
    a filter, the matching messages after `start` less those after `end` (a probe consumer; at
    most the true count when messages arrive meanwhile: then a further request follows). Pull
    requests ask for no more, so that a small filtered range (a pushed-down filter's) is not
    followed by a request's worth of matching messages past its end."""
    span = spec.end - spec.start
    if not spec.filters or pending_from_start <= 0:
        return span
    after_end = count_matching(conn, spec.stream, spec.filters, spec.end, spec.end)
    return max(1, min(span, pending_from_start - after_end))


def subject_matches(filter_subject: str, subject: str) -> bool:
    """NATS wildcard match: `*` one token, `>` one or more trailing tokens."""
    ft, st = filter_subject.split("."), subject.split(".")
    for i, token in enumerate(ft):
        if token == ">":
            return len(st) > i
        if i >= len(st) or (token != "*" and token != st[i]):
            return False
    return len(ft) == len(st)


def fetch_range_by_get(conn: LeanConnection, spec: FetchSpec) -> Iterator[Chunk]:
    """The slow path: one `STREAM.MSG.GET` (next_by_subj) per message.

    Used where no read consumer may be created (work-queue streams). With
    several filters it walks all subjects and filters here.
    """
    next_subj = spec.filters[0] if len(spec.filters) == 1 else ">"
    seq = spec.start + 1
    subjects: list[bytes] = []
    data: list[bytes] = []
    hdrs: list[bytes] = []
    seqs: list[int] = []
    tss: list[int] = []
    while seq <= spec.end:
        try:
            reply = conn.js_api(f"STREAM.MSG.GET.{spec.stream}", {"seq": seq, "next_by_subj": next_subj})
        except JetStreamApiError as exc:
            if exc.err_code == ErrorCode.MESSAGE_NOT_FOUND:
                break
            raise
        msg = reply["message"]
        found = int(msg["seq"])
        if found > spec.end:
            break
        subject = str(msg["subject"])
        if len(spec.filters) <= 1 or any(subject_matches(f, subject) for f in spec.filters):
            subjects.append(subject.encode())
            data.append(base64.b64decode(msg.get("data") or ""))
            hdrs.append(base64.b64decode(msg.get("hdrs") or ""))
            seqs.append(found)
            tss.append(rfc3339_ns(str(msg["time"])))
        seq = found + 1
        if len(seqs) >= spec.chunk_rows:
            yield Chunk(subjects, data, hdrs if spec.with_headers else None, seqs, tss)
            subjects, data, hdrs, seqs, tss = [], [], [], [], []
    if seqs:
        yield Chunk(subjects, data, hdrs if spec.with_headers else None, seqs, tss)


def rfc3339_ns(text: str) -> int:
    """RFC 3339 with up to nanoseconds -> ns since the epoch."""
    main, _, frac = text.rstrip("Z").partition(".")
    zone = ""
    for sign in ("+", "-"):
        if sign in frac:
            frac, _, tz = frac.partition(sign)
            zone = sign + tz
    if not frac and ("+" in main[10:] or "-" in main[10:]):
        idx = max(main.rfind("+"), main.rfind("-"))
        main, zone = main[:idx], main[idx:]
    base = datetime.fromisoformat(main + (zone or "+00:00"))
    return int(base.timestamp()) * 1_000_000_000 + int((frac or "0").ljust(9, "0")[:9])


def _delete_consumer(conn: LeanConnection, stream: str, name: str) -> None:
    if conn.sock is None:
        return  # the connection broke: the consumer expires on its own (or went with the server)
    try:
        conn.js_api(f"CONSUMER.DELETE.{stream}.{name}", retry=False)
    except (NatsError, OSError) as exc:
        # it expires on its own after inactive_threshold; worth a note, not a failure
        log.warning("could not delete ephemeral consumer %s on stream %s: %s", name, stream, exc)


def _pull_range(conn: LeanConnection, spec: FetchSpec, name: str, expected: int) -> Iterator[RawChunk]:
    """Pull the range with no_wait requests; data frames are collected raw (msg_runs.py),
    everything else is handled here one frame at a time."""
    # not under the connection's request wildcard: every message would arrive twice
    inbox = conn.new_inbox()
    sid = conn.subscribe(inbox)
    next_subject = conn.api_subject(f"CONSUMER.MSG.NEXT.{spec.stream}.{name}")
    end = spec.end
    chunk_rows = spec.chunk_rows
    runs = RunScanner(sid, spec.with_headers)
    done = False

    batch = max(1, min(spec.request_batch, expected))  # see _in_range
    # The batch size comes from the stream's average message size; max_bytes bounds
    # a request whatever the sizes in this range (the server ends the request with
    # "409 Message Size Exceeds MaxBytes" when it is full).
    max_bytes = REQUEST_BYTES
    requests = PullRequests()

    def ask(count: int) -> None:
        body = json.dumps({"batch": count, "max_bytes": max_bytes, "no_wait": True}).encode()
        conn.publish(next_subject, body, reply=inbox)
        requests.sent(count)

    ask(batch)
    try:
        while True:
            buf, pos = conn._buf, conn._pos
            while not done:
                had = len(runs)
                pos = runs.scan(buf, pos)
                if len(runs) > had:
                    requests.delivered(len(runs) - had)
                    if runs.last_fields()[2] == 0:
                        done = True  # nothing more pending for this consumer
                        break
                # anything else, one frame at a time: statuses, PING, errors
                frames, new_pos = parse_frames(buf, pos, max_frames=1)
                if not frames:
                    break
                frame_start, pos = pos, new_pos
                op, subject, msid, reply, hdr, payload = frames[0]
                if op == b"PING":
                    conn.send(b"PONG\r\n")
                elif op == b"-ERR":
                    raise conn.server_error(payload)
                elif op != b"MSG" or msid != sid:
                    continue
                elif reply.startswith(ACK_PREFIX):  # a data frame the scan did not take (not expected)
                    runs.add_frame(buf[frame_start:pos])
                    requests.delivered(1)
                    done = runs.last_fields()[2] == 0
                else:
                    status, desc, _ = parse_headers(hdr) if hdr else (None, "", [])
                    if status == Status.NO_MESSAGES or (
                        status == Status.REQUEST_TIMEOUT and desc.lower().startswith("request timeout")
                    ):
                        done = True  # no_wait: nothing (more) pending for this consumer
                    elif status == Status.CONTROL and reply:
                        conn.publish(reply.decode(), b"")  # flow control request: answer it
                    elif status == Status.CONFLICT and desc.lower().startswith("batch completed"):
                        pass  # sent with max_bytes once the count is reached; already counted
                    elif status == Status.CONFLICT and "maxbytes" in desc.lower().replace(" ", ""):
                        count, brought = requests.ended()  # what it did not bring is asked again
                        if count and not brought:  # not even one message fit: allow bigger ones
                            max_bytes *= 2
                    elif status == Status.REQUEST_TIMEOUT and desc.lower().startswith("requests pending"):
                        requests.refused()  # the newer request came early; the older goes on
                    elif status == Status.NO_RESPONDERS or (
                        status == Status.CONFLICT and "consumer deleted" in desc.lower()
                    ):
                        # the consumer is gone (a restarted server, a consumer leader moving): resumable
                        raise ReadInterruptedError(
                            f"reading {spec.stream} ({spec.start}, {spec.end}]: status {status} {desc}".rstrip()
                        )
                    elif status != Status.CONTROL:
                        raise NatsError(f"reading {spec.stream} ({spec.start}, {spec.end}]: status {status} {desc}")
            conn._buf, conn._pos = buf, pos
            if len(runs) and runs.last_fields()[0] >= end:
                done = True
            while len(runs) >= chunk_rows or (done and len(runs)):
                raw = runs.take(chunk_rows)
                chunk = raw.up_to(end)
                if len(chunk):
                    yield chunk
                if len(chunk) < len(raw):  # cut at the end of the range: nothing more is ours
                    return
            if done:
                return
            count = requests.to_ask(batch, expected - requests.asked)
            if count:
                ask(count)
            conn.fill()
    finally:
        conn.unsubscribe(sid)
