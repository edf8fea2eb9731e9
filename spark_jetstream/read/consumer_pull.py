"""Pulling from and acknowledging to an existing pull consumer: the wire half of option `consumer`.

The driver (consumer_feed.py) reads through a durable pull consumer an
operator made, with only the rights on that consumer
(`$JS.API.CONSUMER.INFO.<stream>.<name>`, `$JS.API.CONSUMER.MSG.NEXT.<stream>.<name>`,
`$JS.ACK.<stream>.<name>.>` and its inbox):
- `pull`: one pull request (`no_wait`, or waiting up to `expires`) and the
  messages it delivers, each with its ack subject (`Delivered`). It ends at
  the request's end status (404 no messages, 408 request timeout, 409 for a
  full batch, max bytes, a leader change or a server shutting down) or when
  `batch` messages came;
  any other status is an error naming the consumer and the status (the
  consumer deleted, a push consumer, a request limit of the consumer).
- `ack_sync`: acknowledgements sent as requests, in bursts of at most
  `ACK_BURST`, each burst waiting for every reply. nats-server replies to an
  ack sent with a reply subject once it processed it (and, replicated, once
  the ack is applied); the bundled server once it is stored. A PING/PONG
  flush only says the server read the bytes: the acks wait in a queue there.
  So a commit that returned has its acks applied, and a crash after it loses
  none. The same with payload `+WPI` (progress: restarts a message's ack
  wait, nothing else) checks the ack right before anything is written.
- `nak`: `-NAK` without a reply (best effort, flushed): the messages are due
  again at once instead of after the ack wait.
A right the user lacks is the server's `-ERR` (a `ServerError` naming the
subject), raised by the connection at once; no reply in time is a
`NatsTimeoutError` naming the consumer, never a hang.

Ack subjects (ADR-15): `$JS.ACK.<stream>.<consumer>.<delivered>.<stream_seq>.
<consumer_seq>.<timestamp_ns>.<pending>` (9 tokens), or with `<domain>.<account
hash>` after `ACK` (11, and 12+ with a random token). Imports no pyspark and
no pyarrow.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from spark_jetstream.client import LeanConnection, NatsError, NatsTimeoutError, Status
from spark_jetstream.client.frames import ACK_PREFIX, Frame, parse_headers

__all__ = ["ACK_BURST", "ConsumerGoneError", "Delivered", "ack_sync", "nak", "parse_ack_reply", "pull"]

ACK_BURST: Final = 1024  # acks in flight before their replies are awaited
# 409s that end a request without anything being wrong (a leader moving, a server going down: ask again)
_PULL_ENDS: Final = frozenset({"batch completed", "message size exceeds maxbytes", "leadership change", "server shutdown"})


class ConsumerGoneError(NatsError):
    """The consumer does not exist (any more), or answered a pull with an error status."""


@dataclass(frozen=True, slots=True)
class Delivered:
    """One delivered message: what a row needs, and how to acknowledge it."""

    seq: int  # stream sequence
    deliveries: int  # 1 for a first delivery
    subject: bytes
    headers: bytes  # the raw header block (b"" when none)
    data: bytes
    ts_ns: int
    reply: bytes  # the ack subject

    @property
    def size(self) -> int:
        """Bytes the message holds (subject, headers, payload)."""
        return len(self.subject) + len(self.headers) + len(self.data)


def parse_ack_reply(reply: bytes) -> tuple[int, int, int]:
    """(delivery count, stream sequence, timestamp ns) of an ack subject."""
    tokens = reply.split(b".")
    base = 4 if len(tokens) == 9 else 6
    try:
        if len(tokens) not in (9, 11) and len(tokens) < 12:
            raise ValueError
        return int(tokens[base]), int(tokens[base + 1]), int(tokens[base + 3])
    except ValueError:
        raise NatsError(f"not an ack subject: {reply[:200]!r}") from None


def _delivered(frame: Frame) -> Delivered:
    deliveries, seq, ts_ns = parse_ack_reply(frame[3])
    return Delivered(seq, deliveries, frame[1], frame[4], frame[5], ts_ns, frame[3])


def _where(stream: str, consumer: str) -> str:
    return f"consumer {consumer!r} on stream {stream!r}"


def pull(
    conn: LeanConnection,
    stream: str,
    consumer: str,
    *,
    batch: int,
    max_bytes: int = 0,
    expires_s: float = 0.0,
    timeout_s: float = 10.0,
) -> list[Delivered]:
    """One pull request of up to `batch` messages (and `max_bytes`, 0: any): `no_wait`, or
    waiting up to `expires_s` for the first messages when that is set."""
    body: dict[str, object] = {"batch": batch}
    if max_bytes > 0:
        body["max_bytes"] = max_bytes
    if expires_s > 0:
        body["expires"] = int(expires_s * 1e9)
    else:
        body["no_wait"] = True
    inbox = conn.new_inbox()
    sid = conn.subscribe(inbox)
    got: list[Delivered] = []
    deadline = time.monotonic() + expires_s + timeout_s
    try:
        conn.publish(conn.api_subject(f"CONSUMER.MSG.NEXT.{stream}.{consumer}"), json.dumps(body).encode(), inbox)
        while len(got) < batch:
            for frame in _frames(conn, deadline, f"a pull from {_where(stream, consumer)}"):
                if frame[0] != b"MSG" or frame[2] != sid:
                    continue  # a late reply to an earlier request
                if frame[3].startswith(ACK_PREFIX):
                    got.append(_delivered(frame))
                    continue
                status, desc, _ = parse_headers(frame[4]) if frame[4] else (None, "", [])
                if status == Status.CONTROL:
                    continue  # a heartbeat
                if status in (Status.NO_MESSAGES, Status.REQUEST_TIMEOUT) or (
                    status == Status.CONFLICT and desc.lower() in _PULL_ENDS
                ):
                    return got
                if status == Status.NO_RESPONDERS:
                    raise ConsumerGoneError(f"{_where(stream, consumer)} does not exist (no responders)")
                raise ConsumerGoneError(f"a pull from {_where(stream, consumer)} ended with status {status} {desc}".rstrip())
        return got
    finally:
        conn.unsubscribe(sid)


def _frames(conn: LeanConnection, deadline: float, what: str) -> list[Frame]:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise NatsTimeoutError(f"no answer to {what} from {conn.server_url or 'the server'} in time")
    try:
        return conn.frames_within(remaining)
    except NatsTimeoutError:
        raise NatsTimeoutError(f"no answer to {what} from {conn.server_url or 'the server'} in time") from None


def _bursts(items: Sequence[bytes], size: int) -> Iterator[Sequence[bytes]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def ack_sync(
    conn: LeanConnection,
    replies: Sequence[bytes],
    *,
    stream: str,
    consumer: str,
    payload: bytes = b"",
    timeout_s: float = 10.0,
) -> None:
    """Acknowledge (or send `payload`: `+WPI`) each ack subject as a request; return once the
    server confirmed every one."""
    if not replies:
        return
    inbox = conn.new_inbox()
    sid = conn.subscribe(inbox)
    what = f"acknowledgements to {_where(stream, consumer)}"
    try:
        for burst in _bursts(replies, ACK_BURST):
            conn.send(b"".join(conn.pub_frame(r.decode(), payload, inbox) for r in burst))
            confirmed = 0
            deadline = time.monotonic() + timeout_s
            while confirmed < len(burst):
                for frame in _frames(conn, deadline, f"{what} ({confirmed} of {len(burst)} confirmed)"):
                    if frame[0] != b"MSG" or frame[2] != sid:
                        continue
                    status = parse_headers(frame[4])[0] if frame[4] else None
                    if status == Status.NO_RESPONDERS:
                        raise ConsumerGoneError(f"{_where(stream, consumer)} does not exist any more (its acks "
                                                "have no responders)")
                    confirmed += 1
    finally:
        conn.unsubscribe(sid)


def nak(conn: LeanConnection, replies: Sequence[bytes]) -> None:
    """`-NAK` each ack subject (no replies): due again at once. Flushed, best effort."""
    for burst in _bursts(replies, ACK_BURST):
        conn.send(b"".join(conn.pub_frame(r.decode(), b"-NAK") for r in burst))
    if replies:
        conn.flush()
