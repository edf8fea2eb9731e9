"""DIRECT.GET: read messages straight from a stream, answered as messages.

Two forms (ADR-31): `$JS.API.DIRECT.GET.<stream>` with a JSON body (`seq`,
`last_by_subj`, `next_by_subj`, `batch`, `max_bytes`, `multi_last`,
`up_to_seq`, `up_to_time`, `start_time`) and `$JS.API.DIRECT.GET.<stream>.<subject>`
with an empty body (the last message on that subject).

Each answer is the stored message (its payload, its own headers first) with
`Nats-Stream`, `Nats-Subject`, `Nats-Sequence`, `Nats-Time-Stamp` appended.
Batches add `Nats-Num-Pending` (matching messages still after this one) and
`Nats-Last-Sequence` (the previous answered sequence, 0 first) to each
message and end with the status `204 EOB` carrying the same two headers (and
`Nats-UpTo-Sequence` for `multi_last`). A batch stops at `batch` messages or
once the messages sent reach `max_bytes` (subject + headers + payload);
`up_to_seq`/`up_to_time` bound `multi_last` only, as in nats-server. Statuses as nats-server sends them:
`404 Message Not Found` (`404 No Results` for an empty `multi_last`),
`408 Empty Request`, `408 Bad Request`, `408 Malformed Request` (a body that does not decode),
`413 Too Many Results` (`multi_last` matching over 1024 subjects). Without
`max_bytes`, a batch stops at the server's `max_pending` bytes. A batch goes
out over loop turns and waits for a reader that is behind (`BatchReply`). A stream
without `allow_direct` (or no stream) has no direct-get responder: the
requester gets `503`, which nats-py reports as no responders, unless a
mirror of that name with `mirror_direct` answers in its place.
"""

from __future__ import annotations

import bisect
import json
from typing import Any, Final

from jetstream_server.core.gotime import parse_rfc3339_ns, rfc3339_ns
from jetstream_server.core.headers import status_headers
from jetstream_server.core.routing import MessageList
from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.request import ApiRequest
from jetstream_server.jetstream.stream import Stream
from jetstream_server.store.base import StoredMessage
from jetstream_server.store.runs import MessageRun

MULTI_LAST_LIMIT = 1024  # nats-server's maxAllowedResponses: above it, 413 Too Many Results
TURN_BYTES: Final = 128 << 10  # bytes a batch sends per loop turn (a few ms of work)
RUN_MSGS: Final = 1024  # messages a batch reads from the store at once, at most
BACKLOG_WAIT_S: Final = 0.005  # a batch whose reader is behind looks again after this


def _headers(stream: Stream, msg: StoredMessage, extra: list[tuple[str, str]]) -> bytes:
    return _answer_headers(stream, msg.subject, msg.seq, msg.timestamp_ns, msg.headers, extra)


def _answer_headers(
    stream: Stream,
    subject: str,
    seq: int,
    timestamp_ns: int,
    own: bytes | memoryview | None,
    extra: list[tuple[str, str]],
) -> bytes:
    """The header block of an answer: the message's own headers, then
    `Nats-Stream`, `Nats-Subject`, `Nats-Sequence`, `Nats-Time-Stamp` and `extra`."""
    block = bytes(own) if own else None
    if block and block.startswith(b"NATS/1.0"):
        if block.endswith(b"\r\n\r\n"):
            block = block[:-2]
        elif not block.endswith(b"\r\n"):
            block += b"\r\n"
    else:
        block = b"NATS/1.0\r\n"
    parts = [
        block,
        b"Nats-Stream: %s\r\nNats-Subject: %s\r\nNats-Sequence: %d\r\nNats-Time-Stamp: %s\r\n"
        % (stream.name.encode(), subject.encode(), seq, rfc3339_ns(timestamp_ns).encode()),
    ]
    for key, value in extra:
        parts.append(f"{key}: {value}\r\n".encode())
    parts.append(b"\r\n")
    return b"".join(parts)


def _status(host: ApiHost, reply: str | None, code: int, text: str, **extra: str) -> None:
    if reply:
        host.router.publish(reply, None, status_headers(code, text, **extra), b"")


def _direct_stream(host: ApiHost, req: ApiRequest) -> Stream | None:
    stream = host.streams.get(req.params[0])
    if stream is None or not stream.config.allow_direct:
        stream = _mirror_direct(host, req.params[0])
    if stream is None:
        _status(host, req.reply, 503, "")
        return None
    return stream


def _mirror_direct(host: ApiHost, origin: str) -> Stream | None:
    """A mirror with `mirror_direct` answers direct gets for its origin's name
    (nats-server subscribes it to the origin's DIRECT.GET subjects)."""
    for stream in host.streams.values():
        mirror = stream.config.mirror
        if mirror is not None and mirror.name == origin and stream.config.mirror_direct:
            return stream
    return None


def direct_get_last(host: ApiHost, req: ApiRequest) -> None:
    stream = _direct_stream(host, req)
    if stream is None or not req.reply:
        return None
    if req.payload.strip():
        _status(host, req.reply, 408, "Bad Request")
        return None
    msg = stream.store.load_last(req.params[1])
    if msg is None:
        _status(host, req.reply, 404, "Message Not Found")
    else:
        host.router.publish(req.reply, None, _headers(stream, msg, []), msg.data)
    return None


def direct_get(host: ApiHost, req: ApiRequest) -> None:
    stream = _direct_stream(host, req)
    if stream is None or not req.reply:
        return None
    reply = req.reply
    payload = req.payload.strip()
    if not payload:
        _status(host, reply, 408, "Empty Request")
        return None
    try:
        body = json.loads(payload)
        if not isinstance(body, dict):
            raise ValueError("not an object")
        params = _Params(body)
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError):
        _status(host, reply, 408, "Malformed Request")  # what nats-server says when it cannot decode
        return None
    if params.empty():
        _status(host, reply, 408, "Empty Request")
        return None
    if not params.valid():
        _status(host, reply, 408, "Bad Request")
        return None
    if params.multi_last:
        _multi_last(host, stream, reply, params)
    elif params.batch > 0:
        _batch(host, stream, reply, params)
    else:
        _single(host, stream, reply, params)
    return None


class _Params:
    __slots__ = ("seq", "last_by", "next_by", "batch", "max_bytes", "multi_last", "up_to_seq",
                 "up_to_time_ns", "start_time_ns")

    def __init__(self, body: dict[str, Any]) -> None:
        self.seq = _int(body, "seq")
        self.last_by = _str(body, "last_by_subj")
        self.next_by = _str(body, "next_by_subj")
        self.batch = _int(body, "batch")
        self.max_bytes = _int(body, "max_bytes")
        multi = body.get("multi_last") or []
        if not isinstance(multi, list) or not all(isinstance(s, str) and s for s in multi):
            raise ValueError("multi_last must be a list of subjects")
        self.multi_last: list[str] = multi
        self.up_to_seq = _int(body, "up_to_seq")
        self.up_to_time_ns = _time(body, "up_to_time")
        self.start_time_ns = _time(body, "start_time")

    def empty(self) -> bool:
        return not (
            self.seq or self.last_by or self.next_by or self.multi_last or self.start_time_ns
            or self.batch
        )

    def valid(self) -> bool:
        if self.seq < 0 or self.batch < 0 or self.max_bytes < 0 or self.up_to_seq < 0:
            return False
        if self.seq and self.last_by:
            return False
        if self.last_by and self.next_by:
            return False
        if self.start_time_ns and (self.seq or self.last_by):
            return False
        if self.multi_last and (self.seq or self.last_by or self.next_by):
            return False
        if self.up_to_seq and self.up_to_time_ns:
            return False
        if not (self.seq or self.last_by or self.next_by or self.multi_last or self.start_time_ns):
            return False
        return True


def _int(body: dict[str, Any], key: str) -> int:
    value = body.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be an integer")
    return value


def _str(body: dict[str, Any], key: str) -> str:
    value = body.get(key) or ""
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value


def _time(body: dict[str, Any], key: str) -> int:
    value = body.get(key)
    if not value:
        return 0
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a time")
    return parse_rfc3339_ns(value)


def _single(host: ApiHost, stream: Stream, reply: str, p: _Params) -> None:
    store = stream.store
    if p.last_by:
        msg = store.load_last(p.last_by)
    elif p.next_by:
        msg = store.load_next(max(p.seq, 1), [p.next_by])
    elif p.start_time_ns:
        msg = store.load_next(store.seq_for_time(p.start_time_ns))
    else:
        msg = store.load(p.seq)
    if msg is None:
        _status(host, reply, 404, "Message Not Found")
        return
    host.router.publish(reply, None, _headers(stream, msg, []), msg.data)


def _batch(host: ApiHost, stream: Stream, reply: str, p: _Params) -> None:
    store = stream.store
    filters = [p.next_by] if p.next_by else None
    if p.start_time_ns:
        start = store.seq_for_time(p.start_time_ns)
    else:
        start = max(p.seq, 1)
    # nats-server applies up_to_seq/up_to_time to multi_last only
    end = store.state().last_seq
    BatchReply(host, stream, reply, limit=p.batch, max_bytes=p.max_bytes,
               total=_count(store, start, end, filters), start=start, end=end,
               filters=filters).turn()


def _count(store: Any, start: int, end: int, filters: list[str] | None) -> int:
    """Matching messages with start <= seq <= end."""
    last = store.state().last_seq
    pending = int(store.num_pending(start, filters))
    if end < last:
        pending -= int(store.num_pending(end + 1, filters))
    return max(pending, 0)


def _multi_last(host: ApiHost, stream: Stream, reply: str, p: _Params) -> None:
    store = stream.store
    up_to = store.state().last_seq
    if p.up_to_seq:
        up_to = min(up_to, p.up_to_seq)
    if p.up_to_time_ns:
        up_to = min(up_to, store.seq_for_time(p.up_to_time_ns + 1) - 1)
    # Resolve sequences first, capped filter by filter as nats-server does: no
    # message is loaded for a request that ends in 413.
    seqs: dict[int, None] = {}
    if up_to == store.state().last_seq and any(
        store.count_subjects(filt) > MULTI_LAST_LIMIT for filt in p.multi_last
    ):
        # each matching subject has a last message then: 413 without resolving them
        _status(host, reply, 413, "Too Many Results")
        return
    for filt in p.multi_last:
        for subject, info in store.subjects(filt).items():
            if info.last_seq <= up_to:
                seqs[info.last_seq] = None
            elif info.first_seq <= up_to:
                prev = store.load_prev(up_to, [subject])
                if prev is not None:
                    seqs[prev.seq] = None
        if len(seqs) > MULTI_LAST_LIMIT:
            _status(host, reply, 413, "Too Many Results")
            return
    BatchReply(host, stream, reply, limit=p.batch if p.batch > 0 else MULTI_LAST_LIMIT,
               max_bytes=p.max_bytes, total=len(seqs), seqs=sorted(seqs), up_to=up_to).turn()


class BatchReply:
    """One batched direct get, sent over as many loop turns as it needs.

    A turn sends at most `TURN_BYTES` (and at most a quarter of `max_pending`)
    and leaves the rest to a later turn, so a batch of any size never holds the
    loop; before a turn, a reader still holding over half of `max_pending`
    unsent is waited for (`BACKLOG_WAIT_S` at a time), so the server never makes
    its reader a slow consumer by the size of its own answer. The batch ends, as
    on nats-server, after `limit` messages or once the messages sent reach
    `max_bytes` (subject + headers + payload; 0: the server's `max_pending`),
    with `204 EOB`; it stops silently when its reader or its stream is gone.
    Messages come from the range `start..end` (with `filters`) or, for
    `multi_last`, from the resolved sequences `seqs`, read as runs
    (`read_run`, `read_seqs`: about a turn's bytes at a time); a turn's answers
    go to the reader as one run (`Router.publish_run`)."""

    def __init__(
        self,
        host: ApiHost,
        stream: Stream,
        reply: str,
        *,
        limit: int,
        max_bytes: int,
        total: int,
        start: int = 1,
        end: int = 0,
        filters: list[str] | None = None,
        seqs: list[int] | None = None,
        up_to: int | None = None,
    ) -> None:
        self.host = host
        self.stream = stream
        self.reply = reply
        self.limit = limit
        self.max_bytes = max_bytes or host.settings.max_pending  # nats-server: the server's max_pending
        self.total = total
        self.next_seq = start
        self.end = end
        self.filters = filters
        self.seqs = seqs
        self._next_index = 0
        self.up_to = up_to
        self.sent = 0
        self.size = 0
        self.last_seq = 0
        self.turns = 0  # (tests read how the work was split)

    def turn(self) -> None:
        host = self.host
        if host.streams.get(self.stream.name) is not self.stream or not host.router.has_interest(self.reply):
            return
        if self.sent and host.router.backlog(self.reply) > host.settings.max_pending // 2:
            host.clock.call_later(BACKLOG_WAIT_S, self.turn)
            return
        self.turns += 1
        budget = min(TURN_BYTES, max(host.settings.max_pending // 4, 1))
        spent = 0
        out = MessageList()
        stream, reply = self.stream, self.reply
        while self.sent < self.limit and self.size < self.max_bytes:
            run = self._read(budget - spent)
            if not run:
                break
            subjects, seqs, timestamps, hlens, bodies = run.columns()
            for i, body in enumerate(bodies):
                if self.sent >= self.limit or self.size >= self.max_bytes:
                    break
                subject, seq, hlen = subjects[i], seqs[i], hlens[i]
                self.size += len(subject) + len(body)
                self.sent += 1
                extra = [("Nats-Num-Pending", str(self.total - self.sent)),
                         ("Nats-Last-Sequence", str(self.last_seq))]
                headers = _answer_headers(
                    stream, subject, seq, timestamps[i], body[:hlen] if hlen else None, extra
                )
                data = body[hlen:]
                out.add(reply, None, headers, data)
                self.last_seq = seq
                self._taken(seq)
                spent += len(headers) + len(data)
                if spent >= budget:
                    host.router.publish_run(reply, out)
                    host.clock.call_later(0, self.turn)
                    return
            else:
                self._taken_all(run)
        if out:
            host.router.publish_run(reply, out)
        self._finish()

    def _read(self, room: int) -> MessageRun:
        """The next messages to answer with, about `room` bytes of them (at least one)."""
        store = self.stream.store
        wanted = min(self.limit - self.sent, RUN_MSGS)
        if self.seqs is None:
            run = store.read_run(self.next_seq, wanted, max_bytes=max(room, 1), end_seq=self.end,
                                 filters=self.filters)
            if not run and run.blocked_size:
                run = store.read_run(self.next_seq, 1, end_seq=self.end, filters=self.filters)
            return run
        state = store.state()
        average = max(state.bytes // max(state.msgs, 1), 1)
        count = max(1, min(wanted, room // average))
        while self._next_index < len(self.seqs):
            chunk = self.seqs[self._next_index : self._next_index + count]
            run = store.read_seqs(chunk)
            if run:
                return run
            self._next_index += len(chunk)  # none of these is there any more
        return store.read_seqs([])

    def _taken(self, seq: int) -> None:
        """The message `seq` is answered: the next read starts after it."""
        if self.seqs is None:
            self.next_seq = seq + 1
        else:
            self._next_index = bisect.bisect_right(self.seqs, seq, self._next_index)

    def _taken_all(self, run: MessageRun) -> None:
        """Every message of `run` is answered: the next read starts where it ended."""
        if self.seqs is None:
            self.next_seq = max(self.next_seq, run.next_seq)
        else:
            self._next_index = bisect.bisect_left(self.seqs, run.next_seq, self._next_index)

    def _finish(self) -> None:
        host = self.host
        if self.sent == 0:
            _status(host, self.reply, 404, "No Results" if self.seqs is not None else "Message Not Found")
            return
        pending = self.total - self.sent
        if self.up_to is not None:
            _status(host, self.reply, 204, "EOB", Nats_Num_Pending=str(pending),
                    Nats_Last_Sequence=str(self.last_seq), Nats_UpTo_Sequence=str(self.up_to))
            return
        store = self.stream.store
        last = store.state().last_seq
        if last > self.end:
            # the stream grew while the batch went out (nats-server counts again too)
            pending = _count(store, self.next_seq, last, self.filters)
        _status(host, self.reply, 204, "EOB", Nats_Num_Pending=str(pending),
                Nats_Last_Sequence=str(self.last_seq))
