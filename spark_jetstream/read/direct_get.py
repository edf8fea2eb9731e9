"""The read-only range fetch: messages of (start, end] by sequence, without any consumer.

For a reader whose user may only read a stream (`$JS.API.STREAM.INFO.<stream>`
and direct or message get on it; option `readMode=direct`, see
docs/permissions.md):
- `fetch_range_direct`: batched direct gets (ADR-31, nats-server 2.11+, on a
  stream with `allow_direct`): `$JS.API.DIRECT.GET.<stream>` with `{"seq",
  "batch", "max_bytes", "next_by_subj"}` answered by one message per stored
  message (its own headers, then `Nats-Stream`, `Nats-Subject`,
  `Nats-Sequence`, `Nats-Time-Stamp`, `Nats-Num-Pending`,
  `Nats-Last-Sequence`) and a `204 EOB` status; `404` when nothing is left.
  The appended headers are removed again, so a row's `headers` are the
  message's own, as read through a consumer. A batch asks for no more
  messages than sequences are left in the range, and what lies past `end`
  is dropped.
- `seq_at_time`: the first sequence stored at or after a time (the read-only
  way to resolve startingTimestamp / endingTimestamp): one direct get with
  `start_time`, or, on a stream without `allow_direct`, a binary search over
  message gets.
Where batched direct get is not there (no `allow_direct`, a server before
2.11), partitions.py reads with one `STREAM.MSG.GET` per message
(fetch.fetch_range_by_get). A right the user lacks is the server's
permission error naming the subject (`ServerError`), raised at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Final

from spark_jetstream.client import ErrorCode, JetStreamApiError, LeanConnection, NatsError, Status
from spark_jetstream.client.frames import CRLF, parse_headers
from spark_jetstream.client.msg_runs import Chunk
from spark_jetstream.read.fetch import REQUEST_BYTES, FetchSpec, rfc3339_ns, subject_matches

__all__ = ["BATCH_DIRECT_GET_SINCE", "fetch_range_direct", "has_batch_direct_get", "seq_at_time"]

BATCH_DIRECT_GET_SINCE: Final = (2, 11)
BATCH: Final = 10_000  # messages per direct get request (max_bytes bounds the bytes)
_APPENDED: Final = frozenset(
    {b"nats-stream", b"nats-subject", b"nats-sequence", b"nats-time-stamp", b"nats-num-pending", b"nats-last-sequence"}
)


def has_batch_direct_get(server_version: str) -> bool:
    """True for a server version (`INFO.version`) of nats-server 2.11 or later."""
    parts = server_version.lstrip("v").split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= BATCH_DIRECT_GET_SINCE
    except (IndexError, ValueError):
        return False


def _split(block: bytes) -> tuple[bytes, dict[bytes, bytes]]:
    """A direct-get header block -> (the message's own header block, the appended headers)."""
    lines = block.split(CRLF)
    appended: dict[bytes, bytes] = {}
    body = [line for line in lines[1:] if line]
    while body:
        name, _, value = body[-1].partition(b":")
        if name.strip().lower() not in _APPENDED:
            break
        appended[name.strip().lower()] = value.strip()
        body.pop()
    own = b"NATS/1.0\r\n" + b"".join(line + CRLF for line in body) + CRLF if body else b""
    return own, appended


def fetch_range_direct(conn: LeanConnection, spec: FetchSpec) -> Iterator[Chunk]:
    """Every message of (start, end] matching the filter, in chunks, by batched direct gets."""
    one_filter = spec.filters[0] if len(spec.filters) == 1 else None
    subject = conn.api_subject(f"DIRECT.GET.{spec.stream}")
    inbox = conn.new_inbox()
    sid = conn.subscribe(inbox)
    chunk = Chunk([], [], [] if spec.with_headers else None, [], [])
    seq = spec.start + 1
    try:
        while seq <= spec.end:
            body: dict[str, object] = {"seq": seq, "batch": min(BATCH, spec.end - seq + 1), "max_bytes": REQUEST_BYTES}
            if one_filter is not None:
                body["next_by_subj"] = one_filter
            conn.publish(subject, json.dumps(body).encode(), reply=inbox)
            last = 0
            while True:
                frame = conn.wait_for_sid(sid, conn.options.request_timeout_s)
                status, desc, _ = parse_headers(frame[4]) if frame[4] else (None, "", [])
                if status == Status.NO_MESSAGES:  # nothing at or after seq
                    yield from _flush(chunk)
                    return
                if status == Status.NO_RESPONDERS:
                    raise NatsError(
                        f"direct get on stream {spec.stream!r}: no responders (the stream does not allow "
                        "direct get, or does not exist)"
                    )
                if status is not None and status != 204 and status >= 300:
                    raise NatsError(f"direct get on stream {spec.stream!r}: status {status} {desc}".rstrip())
                if status == 204:  # EOB: this batch is complete
                    break
                own, appended = _split(frame[4])
                found = int(appended[b"nats-sequence"])
                last = found
                if found > spec.end:
                    yield from _flush(chunk)
                    return
                msg_subject = appended[b"nats-subject"].decode()
                if len(spec.filters) > 1 and not any(subject_matches(f, msg_subject) for f in spec.filters):
                    continue
                chunk.subjects.append(msg_subject.encode())
                chunk.data.append(frame[5])
                if chunk.headers is not None:
                    chunk.headers.append(own)
                chunk.seqs.append(found)
                chunk.ts_ns.append(rfc3339_ns(appended[b"nats-time-stamp"].decode()))
                if len(chunk) >= spec.chunk_rows:
                    yield from _flush(chunk)
            if last == 0:
                break
            seq = last + 1
        yield from _flush(chunk)
    finally:
        conn.unsubscribe(sid)


def _flush(chunk: Chunk) -> Iterator[Chunk]:
    """Yield what `chunk` holds (a copy) and empty it."""
    if len(chunk):
        yield Chunk(list(chunk.subjects), list(chunk.data), None if chunk.headers is None else list(chunk.headers),
                    list(chunk.seqs), list(chunk.ts_ns))
        for column in (chunk.subjects, chunk.data, chunk.headers, chunk.seqs, chunk.ts_ns):
            if column is not None:
                column.clear()


def seq_at_time(conn: LeanConnection, stream: str, ts_ms: int, last_seq: int, allow_direct: bool) -> int:
    """The first stream sequence stored at or after `ts_ms`; last_seq + 1 if there is none."""
    from datetime import datetime, timezone

    if allow_direct:
        when = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")
        hdr, _ = conn.request(conn.api_subject(f"DIRECT.GET.{stream}"), json.dumps({"start_time": when}).encode())
        status, _, items = parse_headers(hdr) if hdr else (None, "", [])
        if status == Status.NO_MESSAGES:
            return last_seq + 1
        for name, value in items:
            if name.lower() == "nats-sequence":
                return int(value)
        raise NatsError(f"direct get on stream {stream!r}: a reply without Nats-Sequence")
    # no direct get: binary search on message gets (a stream's times ascend with its sequences)
    lo, hi = 1, last_seq + 1
    want_ns = ts_ms * 1_000_000
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            msg = conn.js_api(f"STREAM.MSG.GET.{stream}", {"seq": mid, "next_by_subj": ">"})["message"]
        except JetStreamApiError as exc:
            if exc.err_code != ErrorCode.MESSAGE_NOT_FOUND:
                raise
            hi = mid
            continue
        found = int(msg["seq"])
        if rfc3339_ns(str(msg["time"])) >= want_ns:
            hi = mid
        else:
            lo = found + 1
    return lo
