"""Pipelined JetStream publishing for sink tasks: a bounded window of unacked messages.

One `Publisher` per task, on one `LeanConnection` (client/connection.py: handshake
and frame parsing). Messages are written as HPUB frames in bulk; each has its
own reply subject `<inbox>.<token>` so every pub ack is matched to its
message; acks are read in bulk whenever the window (`max_in_flight`) is full
and at `flush()`.

Invariants:
- `flush()` returns only when every message published so far has a positive
  pub ack (stored, or dropped as a duplicate of a `Nats-Msg-Id` already in the
  stream); otherwise it raises `PublishError` with the server's error.
- A frame stays in `_pending` until its ack arrives. When the connection
  drops, the publisher reconnects (any server of the list) within
  `ack_timeout_s` and re-sends every pending frame with the same reply
  subject and `Nats-Msg-Id`, so nothing is lost and the dedup window drops
  what was already stored.
- Status 503 (no stream for the subject, or JetStream not ready) is retried
  after a reconnect (a restarting server loads its streams first), and while
  a stream captures the subject (a cluster electing the stream's leader:
  client/streams.py asks); otherwise it fails at once naming the subject.
- A message that gets no answer at all (a stream leader killed with the
  message in flight, or a follower that drops it during the election:
  nats-server answers neither) is re-sent, with its `Nats-Msg-Id`, after
  `RESEND_AFTER_S` without any ack, then after twice that, and so on: the
  dedup window drops a copy that was stored after all. A frame without a
  `Nats-Msg-Id` is never re-sent on silence (a copy would be stored twice).
- Nothing is retried past `ack_timeout_s` without progress, nor more than
  `MAX_RECONNECTS` reconnects in one task.
- `stats.resent_duplicates` counts the duplicate acks of frames sent more than
  once (most likely the frame's own stored copy), which the driver's id
  collision warning leaves out.
- `stats.streams` holds every stream a pub ack named (the sink's real
  targets, whatever the subjects were), for the driver's dedup-window check.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add
from typing import Final

from spark_jetstream.client import LeanConnection, NatsError, NatsTimeoutError, Status
from spark_jetstream.client.errors import API_UNAVAILABLE, ErrorCode
from spark_jetstream.client.frames import CRLF, parse_headers
from spark_jetstream.client.streams import capturing_stream
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.write.pub_acks import DUPLICATE_RE, scan_acks

log = logging.getLogger(__name__)

SEND_CHUNK_BYTES: Final = 256 * 1024
RETRY_DELAY_S: Final = 0.1
ELECTION_RETRY_DELAY_S: Final = 0.25  # a stream leader election takes a few seconds
MAX_RECONNECTS: Final = 20  # per task: a server that keeps dropping us is not a blip
# silence (no ack at all) before unacked frames are re-sent: longer than a loaded server's
# ack latency, shorter than a leader election plus the ack timeout
RESEND_AFTER_S: Final = 4.0
_STREAM_RE = re.compile(rb'"stream"\s*:\s*"([^"]*)"')
_MSG_ID_RE = re.compile(rb"\r\nNats-Msg-Id: ([^\r]*)\r\n")


class PublishError(RuntimeError):
    """A message was not stored: the text names the subject, the msg id and the server's error."""


class PublishTimeoutError(PublishError, TimeoutError):
    """No pub ack within the ack timeout."""


@dataclass(slots=True)
class PublishStats:
    published: int = 0  # acked as stored
    duplicates: int = 0  # acked as duplicate (already in the stream)
    # of those, frames this publisher sent more than once (after a reconnect, a 503 or silence):
    # most likely its own earlier copy was stored and its ack lost, not an id reused
    resent_duplicates: int = 0
    reconnects: int = 0
    resends: int = 0  # times unacked frames were re-sent after silence
    streams: set[str] = field(default_factory=set)  # named by the pub acks


def _frame_subject(frame: bytes) -> str:
    return frame[5 : frame.index(b" ", 5)].decode("utf-8", "replace")


def _frame_msg_id(frame: bytes) -> str:
    m = _MSG_ID_RE.search(frame)
    return m.group(1).decode("utf-8", "replace") if m else "?"


class Publisher:
    """Publishes HPUB frames with a bounded in-flight window. Not thread-safe."""

    def __init__(
        self,
        options: ConnectionOptions,
        *,
        max_in_flight: int = 2048,
        ack_timeout_s: float = 30.0,
        resend_after_s: float = RESEND_AFTER_S,
        connect: Callable[[ConnectionOptions], LeanConnection] = LeanConnection.connect,
    ) -> None:
        self._options = options
        self._max_in_flight = max(1, max_in_flight)
        self._ack_timeout_s = ack_timeout_s
        self._resend_after_s = resend_after_s
        self._connect_fn = connect
        self._prefix = options.inbox_prefix.encode() + b"." + secrets.token_hex(10).encode() + b"."
        self._token = 0
        self._pending: dict[int, bytes] = {}
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._retry: list[tuple[float, int]] = []
        self._resent: set[int] = set()  # unacked tokens sent more than once
        self._reconnected_at: float | None = None
        self._captured: set[str] = set()  # subjects a stream captures (503 = an election)
        self.stats = PublishStats()
        # the opening of the last pub ack seen: acks that start alike name the same stream
        self._ack_head = b"\x00"
        self._conn: LeanConnection | None = None
        self._sid = b""
        self._max_payload = 1024 * 1024
        self._open_retrying("connecting")

    # -- connection ---------------------------------------------------------------
    def _open(self) -> None:
        conn = self._connect_fn(self._options)
        self._conn = conn
        self._sid = conn.subscribe(self._prefix.decode() + "*")
        if conn.sock is not None:
            conn.sock.settimeout(self._ack_timeout_s)
        if conn.info is not None:
            self._max_payload = conn.info.max_payload

    def _open_retrying(self, what: str) -> None:
        """Connect, retrying with back-off for up to the ack timeout (a server restart)."""
        deadline = time.monotonic() + self._ack_timeout_s
        delay = 0.05
        while True:
            try:
                self._open()
                return
            except (NatsError, OSError) as exc:
                refused = "server error" in str(exc)  # -ERR, e.g. authorization: not transient
                if refused or time.monotonic() + delay > deadline:
                    raise PublishError(
                        f"{what}: could not connect to {self._options.display_servers} "
                        f"within ackTimeout={self._ack_timeout_s:g}s: {exc}"
                    ) from exc
                log.info("jetstream sink: %s: %s; retrying in %.2fs", what, exc, delay)
                time.sleep(delay)  # reconnect back-off, bounded by the deadline
                delay = min(delay * 2, 1.0)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _reconnect(self, cause: BaseException) -> None:
        """Reconnect and re-send every pending frame; raise if it cannot within the ack timeout."""
        self.stats.reconnects += 1
        if self.stats.reconnects > MAX_RECONNECTS:
            raise PublishError(
                f"lost the connection to the server {self.stats.reconnects} times in one task "
                f"(last: {cause}); giving up with {len(self._pending)} message(s) unacked"
            ) from cause
        log.warning(
            "jetstream sink: connection lost (%s); reconnecting, %d messages to re-send",
            cause,
            len(self._pending),
        )
        self.close()
        self._out, self._out_bytes = [], 0
        self._open_retrying(f"lost the connection to the server ({cause})")
        self._reconnected_at = time.monotonic()
        self._retry = []
        self._resent.update(self._pending)
        for token in sorted(self._pending):
            self._queue(self._pending[token])
        self._send()

    # -- writing ------------------------------------------------------------------
    def _queue(self, frame: bytes) -> None:
        self._out.append(frame)
        self._out_bytes += len(frame)

    def _send(self) -> None:
        if not self._out:
            return
        data = b"".join(self._out)
        self._out, self._out_bytes = [], 0
        try:
            assert self._conn is not None
            self._conn.send(data)
        except (NatsError, OSError) as exc:
            self._reconnect(exc)

    def publish_many(
        self, subjects: Sequence[bytes], header_blocks: Sequence[bytes], payloads: Sequence[bytes]
    ) -> None:
        """Queue one message per (subject, header block, payload); blocks while the window is full.

        Frames are made a chunk at a time (at most the window's free room and about
        `SEND_CHUNK_BYTES` of payload), sent when `SEND_CHUNK_BYTES` are queued."""
        n = len(payloads)
        if len(subjects) != n or len(header_blocks) != n:
            raise ValueError(f"{len(subjects)} subjects, {len(header_blocks)} header blocks, {n} payloads")
        pending = self._pending
        window = self._max_in_flight
        ends = list(accumulate(map(len, payloads), initial=0))  # payload bytes before each row
        start = 0
        while start < n:
            room = window - len(pending)
            if room <= 0:
                self._send()
                self._drain(window - 1 - window // 4)
                continue
            stop = min(start + room, max(start + 1, bisect_right(ends, ends[start] + SEND_CHUNK_BYTES) - 1))
            self._queue_frames(subjects[start:stop], header_blocks[start:stop], payloads[start:stop])
            start = stop
            if self._out_bytes >= SEND_CHUNK_BYTES or len(pending) >= window:
                self._send()

    def _queue_frames(
        self, subjects: Sequence[bytes], header_blocks: Sequence[bytes], payloads: Sequence[bytes]
    ) -> None:
        """The HPUB frames of a chunk, each with its reply `<prefix><token>`, into the window."""
        n = len(payloads)
        hlens = list(map(len, header_blocks))
        totals = list(map(add, hlens, map(len, payloads)))
        max_payload = self._max_payload
        if max(totals) > max_payload:
            i = next(i for i, total in enumerate(totals) if total > max_payload)
            raise PublishError(
                f"message {_frame_msg_id(CRLF + header_blocks[i])!r} to subject {subjects[i].decode()!r} "
                f"is {totals[i]} bytes with headers; the server's max_payload is {max_payload}"
            )
        tokens = range(self._token + 1, self._token + 1 + n)
        prefix = self._prefix
        if subjects.count(subjects[0]) == n and hlens.count(hlens[0]) == n:
            # one subject and header size (the usual batch): fewer fields to format a row
            fmt = b"HPUB %b %b%%d %d %%d\r\n%%b%%b\r\n" % (
                subjects[0].replace(b"%", b"%%"),
                prefix.replace(b"%", b"%%"),
                hlens[0],
            )
            frames = [fmt % row for row in zip(tokens, totals, header_blocks, payloads, strict=True)]
        else:
            frames = [
                b"HPUB %b %b%d %d %d\r\n%b%b\r\n" % (subject, prefix, token, hlen, total, hdr, payload)
                for subject, token, hlen, total, hdr, payload in zip(
                    subjects, tokens, hlens, totals, header_blocks, payloads, strict=True
                )
            ]
        self._token += n
        self._pending.update(zip(tokens, frames, strict=True))
        self._out.extend(frames)
        self._out_bytes += sum(map(len, frames))

    def flush(self) -> PublishStats:
        """Send what is queued and wait until every message is acked."""
        self._send()
        self._drain(0)
        return self.stats

    # -- acks -----------------------------------------------------------------------
    def _drain(self, target: int) -> None:
        """Read acks until at most `target` messages are unacked."""
        pending = self._pending
        progress_at, silence, resend_at = self._progress_clocks()
        while len(pending) > target:
            now = time.monotonic()
            if self._retry and self._retry[0][0] <= now:
                self._resend_due(now)
                continue
            if now >= resend_at:
                self._resend_silent(now - progress_at)
                silence *= 2
                resend_at = now + silence
            remaining = progress_at + self._ack_timeout_s - now
            if remaining <= 0:
                first = min(pending)
                raise PublishTimeoutError(
                    f"no pub ack within ackTimeout={self._ack_timeout_s:g}s for {len(pending)} "
                    f"message(s), the first {_frame_msg_id(pending[first])!r} to subject "
                    f"{_frame_subject(pending[first])!r}"
                )
            wait = max(0.001, min(remaining, resend_at - now))
            if self._retry:
                wait = max(0.001, min(wait, self._retry[0][0] - now))
            conn = self._conn
            assert conn is not None and conn.sock is not None
            before = len(pending)  # acks counted in the read (`_take_acks`) are progress too
            try:
                conn.sock.settimeout(wait)
                try:
                    frames = conn.read_frames(take=self._take_acks)
                finally:
                    if conn.sock is not None:  # sends block up to the ack timeout, not `wait`
                        conn.sock.settimeout(self._ack_timeout_s)
            except NatsTimeoutError:
                continue
            except NatsError as exc:
                if str(exc).startswith("server error") and "stale" not in str(exc).lower():
                    raise PublishError(f"the server refused the publish: {exc}") from exc
                self._reconnect(exc)
                progress_at, silence, resend_at = self._progress_clocks()
                continue
            except OSError as exc:
                self._reconnect(exc)
                progress_at, silence, resend_at = self._progress_clocks()
                continue
            sid = self._sid
            skip = len(self._prefix)
            stored = duplicates = 0
            resent = self._resent
            for f in frames:
                if f[2] != sid or f[0] != b"MSG":
                    continue
                payload = f[5]
                if f[4] or b'"error"' in payload:
                    self._on_ack(f[1], f[4], payload)  # status or error: the slow path
                    continue
                # fast path: a positive pub ack for `<prefix><token>`
                token = int(f[1][skip:])
                if pending.pop(token, None) is None:
                    continue  # an ack for a frame re-sent after a reconnect, already counted
                if not payload.startswith(self._ack_head):
                    self._note_stream(payload)
                if b"duplicate" in payload and DUPLICATE_RE.search(payload):
                    duplicates += 1
                    if token in resent:
                        self.stats.resent_duplicates += 1
                else:
                    stored += 1
                if resent:
                    resent.discard(token)
            self.stats.published += stored
            self.stats.duplicates += duplicates
            if len(pending) < before:
                progress_at, silence, resend_at = self._progress_clocks()

    def _take_acks(self, buf: bytes, pos: int) -> int:
        """The bulk path (pub_acks.py): count a buffer of plain positive acks at once;
        returns where it stopped (`pos`: nothing taken, the frames go the full parse)."""
        run = scan_acks(buf, pos, self._prefix, self._sid)
        if run is None:
            return pos
        pending = self._pending
        resent = self._resent
        stats = self.stats
        for token in run.duplicates:
            if pending.pop(token, None) is not None:
                stats.duplicates += 1
                if token in resent:
                    stats.resent_duplicates += 1
        before = len(pending)
        # acks of frames re-sent after a reconnect may come twice: counted once, when popped
        deque(map(pending.pop, run.tokens, repeat(None)), maxlen=0)
        stats.published += before - len(pending)
        if resent:
            resent.difference_update(run.tokens)
        for stream in run.streams:
            stats.streams.add(stream.decode("utf-8", "replace"))
        return run.end

    def _progress_clocks(self) -> tuple[float, float, float]:
        """(now, the silence before a re-send, when that is) at a drain's start and on progress:
        the ack timeout and the re-sends count from the last progress."""
        now = time.monotonic()
        return now, self._resend_after_s, now + self._resend_after_s

    def _note_stream(self, payload: bytes) -> None:
        m = _STREAM_RE.search(payload)
        if m is not None:
            self.stats.streams.add(m.group(1).decode("utf-8", "replace"))
            # `{"stream":"X",` and the like: the next ack with this opening names X too
            self._ack_head = payload[: m.end() + 1] if m.start() <= 1 else b"\x00"

    def _resend_due(self, now: float) -> None:
        due = [token for when, token in self._retry if when <= now]
        self._retry = [(when, token) for when, token in self._retry if when > now]
        for token in due:
            frame = self._pending.get(token)
            if frame is not None:
                self._resent.add(token)
                self._queue(frame)
        self._send()

    def _resend_silent(self, silent_s: float) -> None:
        """Re-send every unacked frame that carries a `Nats-Msg-Id` (none in the retry queue)."""
        queued = {token for _, token in self._retry}
        tokens = [
            token
            for token, frame in sorted(self._pending.items())
            if token not in queued and b"\r\nNats-Msg-Id: " in frame
        ]
        if not tokens:
            return
        self._resent.update(tokens)
        frames = [self._pending[token] for token in tokens]
        self.stats.resends += 1
        log.warning(
            "jetstream sink: no pub ack for %.1fs; re-sending %d unacked message(s) (the first %r), "
            "the dedup window drops copies already stored",
            silent_s,
            len(frames),
            _frame_msg_id(frames[0]),
        )
        for frame in frames:
            self._queue(frame)
        self._send()

    def _retryable(self) -> bool:
        at = self._reconnected_at
        return at is not None and time.monotonic() - at < self._ack_timeout_s

    def _election(self, frame: bytes) -> bool:
        """True when a stream captures the frame's subject: its 503 is a leader election
        (retried until the drain's ack timeout), not a missing stream."""
        subject = _frame_subject(frame)
        if subject in self._captured:
            return True
        try:
            stream = capturing_stream(self._options, subject)
        except (NatsError, OSError) as exc:
            raise PublishError(
                f"publish to subject {subject!r}: no responders (status 503), and the stream "
                f"lookup failed too: {exc}"
            ) from exc
        if stream is None:
            return False
        log.warning(
            "jetstream sink: no responders for subject %r of stream %r: a leader election; retrying",
            subject,
            stream,
        )
        self._captured.add(subject)
        return True

    def _on_ack(self, reply: bytes, hdr: bytes, payload: bytes) -> None:
        try:
            token = int(reply[reply.rindex(b".") + 1 :])
        except ValueError:
            return
        frame = self._pending.get(token)
        if frame is None:
            return  # an ack for a frame re-sent after a reconnect, already counted
        if hdr:
            status, description, _ = parse_headers(hdr)
            if status == Status.NO_RESPONDERS:
                if self._retryable():
                    self._retry.append((time.monotonic() + RETRY_DELAY_S, token))
                    return
                if self._election(frame):
                    self._retry.append((time.monotonic() + ELECTION_RETRY_DELAY_S, token))
                    return
                raise PublishError(
                    f"no stream captures subject {_frame_subject(frame)!r} (no responders, status 503)"
                )
            if status is not None and status >= 300:  # not informational: the publish failed
                raise PublishError(
                    f"publish of {_frame_msg_id(frame)!r} to subject {_frame_subject(frame)!r} "
                    f"failed: status {status} {description}"
                )
        if b'"error"' in payload:
            err = json.loads(payload).get("error") or {}
            code = int(err.get("code", 0))
            if code == API_UNAVAILABLE and self._retryable():
                self._retry.append((time.monotonic() + RETRY_DELAY_S, token))
                return
            if err.get("err_code") == ErrorCode.DUPLICATE_MESSAGE_IN_PROCESS:  # until the ack timeout, like an election
                self._retry.append((time.monotonic() + ELECTION_RETRY_DELAY_S, token))
                return
            raise PublishError(
                f"publish of {_frame_msg_id(frame)!r} to subject {_frame_subject(frame)!r} failed: "
                f"{err.get('description', '?')} (code {code}, err_code {err.get('err_code', 0)})"
            )
        del self._pending[token]
        self._note_stream(payload)
        if b"duplicate" in payload and DUPLICATE_RE.search(payload):
            self.stats.duplicates += 1
            if token in self._resent:
                self.stats.resent_duplicates += 1
        else:
            self.stats.published += 1
        self._resent.discard(token)
