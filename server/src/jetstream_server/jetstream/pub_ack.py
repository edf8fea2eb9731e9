"""What a publisher is answered: the pub ack JSON, byte for byte as nats-server writes it.

    {"stream":"S","seq":7}                                  stored (`"domain"` after seq)
    {"stream":"S","seq":7,"duplicate":true}                 a Nats-Msg-Id seen before
    {"stream":"S","seq":7,"val":"3"}                        a counter stream's total
    {"stream":"S","seq":9,"batch":"b","count":3}            a committed batch (atomic or fast)
    {"error":{"code":..,"err_code":..,"description":..},"stream":"S","seq":0}

`PubAckEncoder` writes them for one JetStream domain; the common answer (a
new message stored) is one formatted bytes string from a per-stream prefix,
not a `json.dumps` per message. `BatchAck` is the pub ack of a committed
atomic batch: the last message's, with the batch fields.
"""

from __future__ import annotations

import json
from typing import Any

from jetstream_server.jetstream import counters
from jetstream_server.jetstream.errors import ApiError
from jetstream_server.jetstream.stream import PubAck, Stream


class BatchAck(PubAck):
    """The pub ack of a committed batch: the last message's, with the batch fields."""

    __slots__ = ("batch_id", "count")

    def __init__(self, ack: PubAck, batch_id: str, count: int) -> None:
        super().__init__(ack.seq, ack.duplicate, ack.error, ack.msg, ack.republish)
        self.batch_id = batch_id
        self.count = count


def dumps(body: dict[str, Any]) -> bytes:
    """Compact JSON, as nats-server writes it."""
    return json.dumps(body, separators=(",", ":")).encode()


class PubAckEncoder:
    """Pub acks of one JetStream domain ("" when none), see module docstring."""

    def __init__(self, domain: str = "") -> None:
        self.domain = domain
        self._prefix: dict[str, bytes] = {}  # stream name -> b'{"stream":<name>,"seq":'
        self._suffix = b',"domain":' + json.dumps(domain).encode() + b"}" if domain else b"}"

    def encode(self, stream: Stream, ack: PubAck) -> bytes:
        """The answer to a publish on `stream` (any outcome)."""
        if ack.error is not None:
            return self.error(stream.name, ack.error)
        if isinstance(ack, BatchAck):
            return self.batch(stream.name, ack.seq, ack.batch_id, ack.count)
        if ack.duplicate:
            body = self.body(stream.name, ack.seq)
            body["duplicate"] = True
            return dumps(body)
        if stream.counter and ack.msg is not None:
            body = self.body(stream.name, ack.seq)
            body["val"] = counters.value_of(ack.msg.data)
            return dumps(body)
        return self.stored(stream.name, ack.seq)

    def stored(self, stream: str, seq: int) -> bytes:
        """A new message stored: the hot path."""
        prefix = self._prefix.get(stream)
        if prefix is None:
            prefix = self._prefix[stream] = b'{"stream":' + json.dumps(stream).encode() + b',"seq":'
        return b"%s%d%s" % (prefix, seq, self._suffix)

    def batch(
        self, stream: str, seq: int, batch_id: str, count: int, *, duplicate: bool = False
    ) -> bytes:
        """A committed batch (`count`: its last batch sequence); `duplicate` when
        a fast batch's first message was a duplicate."""
        body = self.body(stream, seq)
        if duplicate:
            body["duplicate"] = True
        body.update({"batch": batch_id, "count": count})
        return dumps(body)

    def error(self, stream: str, error: ApiError) -> bytes:
        return dumps({"error": error.to_json(), "stream": stream, "seq": 0})

    def body(self, stream: str, seq: int) -> dict[str, Any]:
        """The fields every successful pub ack starts with."""
        body: dict[str, Any] = {"stream": stream, "seq": seq}
        if self.domain:
            body["domain"] = self.domain
        return body
