"""Acknowledgements: messages published to a delivery's reply subject, `$JS.ACK.>`.

Reply subjects (nats-server's two formats):
- v1, 9 tokens: `$JS.ACK.<stream>.<consumer>.<delivery_count>.<stream_seq>.
  <consumer_seq>.<timestamp_ns>.<num_pending>`
- v2, 12 tokens and up: `$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.
  <delivery_count>.<stream_seq>.<consumer_seq>.<timestamp_ns>.<num_pending>.<random>`

Payloads: empty or `+ACK`; `-NAK` optionally followed by `{"delay": ns}`;
`+WPI` (in progress: restart the ack wait); `+TERM` optionally followed by a
reason; `+NXT` optionally followed by a pull request (ack, then pull with the
ack's own reply subject as the inbox). An ack sent as a request (a reply
subject other than for `+NXT`) gets an empty reply once processed and, for a
durable consumer on file storage, written (a process kill after the reply
keeps the ack).

`AckInbox(streams, publish)` is the `$JS.ACK.>` subscription handler (the
engine subscribes it): it finds the consumer by the subject's stream and
consumer tokens and calls its `ack`, `nak`, `progress`, `term` or
`process_pull`.

Invariants: a malformed subject or payload is logged and dropped, never
raised into the broker; an ack for an unknown stream or consumer sent as a
request gets the no-responders status (nats-server has no subscriber there).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

from jetstream_server.core.headers import status_headers
from jetstream_server.jetstream.consumer.consumer import Consumer
from jetstream_server.jetstream.seams import StreamForConsumers

logger = logging.getLogger(__name__)

ACK_SUBJECT = "$JS.ACK.>"
NO_RESPONDERS = status_headers(503)


class AckSubject:
    """A parsed ack reply subject. Built once per ack, on the hot path: a plain
    class, which the compiled build makes a native one (a NamedTuple's
    constructor stays a Python function there)."""

    __slots__ = (
        "stream", "consumer", "delivery_count", "stream_seq", "consumer_seq", "timestamp_ns", "num_pending"
    )

    def __init__(
        self,
        stream: str,
        consumer: str,
        delivery_count: int,
        stream_seq: int,
        consumer_seq: int,
        timestamp_ns: int,
        num_pending: int,
    ) -> None:
        self.stream = stream
        self.consumer = consumer
        self.delivery_count = delivery_count
        self.stream_seq = stream_seq
        self.consumer_seq = consumer_seq
        self.timestamp_ns = timestamp_ns
        self.num_pending = num_pending


def parse_ack_subject(subject: str) -> AckSubject | None:
    tokens = subject.split(".")
    if len(tokens) == 9:
        base = 2
    elif len(tokens) >= 12:
        base = 4
    else:
        return None
    if tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    try:
        return AckSubject(
            tokens[base],
            tokens[base + 1],
            int(tokens[base + 2]),
            int(tokens[base + 3]),
            int(tokens[base + 4]),
            int(tokens[base + 5]),
            int(tokens[base + 6]),
        )
    except ValueError:
        return None


def _parse_delay(rest: bytes) -> int:
    rest = rest.strip()
    if not rest:
        return 0
    try:
        body = json.loads(rest)
    except (ValueError, RecursionError):
        logger.debug("-NAK with a body that is not JSON: %r", rest[:64])
        return 0
    if isinstance(body, dict):
        delay = body.get("delay", 0)
        if isinstance(delay, int) and not isinstance(delay, bool):
            return max(delay, 0)
    return 0


class AckInbox:
    """The `$JS.ACK.>` subscription handler (see module docstring)."""

    def __init__(
        self,
        streams: Mapping[str, StreamForConsumers],
        publish: Callable[[str, str | None, bytes | None, bytes], None],
    ) -> None:
        self.streams = streams
        self.publish = publish

    def __call__(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        ack = parse_ack_subject(subject)
        if ack is None:
            logger.debug("ignoring malformed ack subject %r", subject)
            return
        stream = self.streams.get(ack.stream)
        consumer = stream.consumers.get(ack.consumer) if stream is not None else None
        if not isinstance(consumer, Consumer) or consumer.config.ack_policy == "flow_control":
            # nats-server: nobody listens on the ack subject of a missing consumer,
            # nor on that of one acknowledged by its flow control answers.
            if reply:
                self.publish(reply, None, NO_RESPONDERS, b"")
            return
        body = payload.strip()
        kind = body[:4]
        if kind == b"+NXT":
            consumer.ack(ack.stream_seq, ack.consumer_seq)
            if reply:
                consumer.process_pull(reply, body[4:])
            return
        if not body or kind == b"+ACK":
            consumer.ack(ack.stream_seq, ack.consumer_seq)
        elif kind == b"-NAK":
            consumer.nak(ack.stream_seq, _parse_delay(body[4:]), ack.consumer_seq,
                         ack.delivery_count)
        elif kind == b"+WPI":
            consumer.progress(ack.stream_seq)
        elif body.startswith(b"+TERM"):
            reason = body[5:].strip().decode("utf-8", "replace")
            consumer.term(ack.stream_seq, ack.consumer_seq, ack.delivery_count, reason)
        else:
            logger.debug("unknown ack payload %r on %s", body[:32], subject)
        if reply:
            # A double ack (ack as request) is answered once the ack is stored (and
            # fsynced with sync_always); if it could not be, no answer: the client's
            # request fails rather than confirming what a restart would undo.
            consumer.confirm(reply)
