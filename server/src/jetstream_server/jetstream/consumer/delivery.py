"""How messages leave a consumer: the shape shared by pull and push delivery.

A consumer delivers through exactly one `Delivery`, `PullDelivery` (pull.py:
to waiting pull requests) or `PushDelivery` (push.py: to a deliver subject).
Both are built the same way, `XDelivery(source, host, config)`, and the
consumer drives them the same way: `run` whenever something may have become
deliverable, `request` for every pull request (a push delivery refuses it),
`reconfigure` on a config update, `close` when the consumer stops.

A delivery takes its messages from the consumer through `Source`:
`next_message` (redeliveries first, then new messages), then `commit` once
it sends one (the consumer records it and returns the ack reply subject), or
`unget` to give it back. It sends through the `ConsumerHost`, the server as a
consumer sees it.

Hot path: `run` loops over messages itself. Per message it calls
`next_message`, `commit` and `host.deliver` and nothing else: the turn's
budget is a local counter, the headers-only frame is built inline.

Invariant: a delivery never changes consumer state except through `Source`.
"""

from __future__ import annotations

from typing import Final, Protocol

from jetstream_server.core.clock import Clock
from jetstream_server.core.router import MessageHandler
from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.consumer.cursor import Cursor
from jetstream_server.store.base import StoredMessage

NS: Final = 1_000_000_000


class ConsumerHost(Protocol):
    """What a consumer needs from the server it runs in."""

    clock: Clock
    account: str  # named in advisories
    domain: str  # the JetStream domain ("" when none), named in advisories

    def publish(
        self, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None: ...

    def deliver(
        self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        """Route to subscribers of `target`, presenting the message as `subject`
        (a delivered message keeps its stream subject, as with nats-server)."""
        ...

    def has_interest(self, subject: str) -> bool: ...

    def subscribe(self, subject: str, handler: MessageHandler) -> int: ...

    def unsubscribe(self, sid: int) -> None: ...


class Source(Protocol):
    """What a delivery asks of its consumer."""

    stream_name: str
    name: str
    cursor: Cursor  # read only: the last delivered sequences for heartbeats
    delivered_last_ns: int

    @property
    def closed(self) -> bool: ...

    @property
    def paused(self) -> bool: ...

    @property
    def num_ack_pending(self) -> int:
        """Messages delivered and not yet acknowledged (overflow priority groups)."""
        ...

    def next_message(self, hint: StoredMessage | None = None) -> tuple[StoredMessage, int] | None:
        """The next message to deliver and its delivery count, not yet recorded."""
        ...

    def commit(self, msg: StoredMessage, dc: int) -> str:
        """Record the delivery of `msg`; returns the ack reply subject to send it with."""
        ...

    def unget(self, msg: StoredMessage, dc: int) -> None:
        """Give back a message `next_message` returned (it was not sent)."""
        ...

    def ack_reply(self, msg: StoredMessage, dc: int) -> str:
        """The reply subject `commit(msg, dc)` would give (to size a message first)."""
        ...

    def has_more(self) -> bool:
        """Messages remain for this consumer (new or due again)."""
        ...

    def continue_later(self) -> None:
        """This loop turn's budget is used up: deliver the rest on the next turn."""
        ...

    def kick(self) -> None:
        """Something may be deliverable now (runs the delivery again)."""
        ...

    def ack(self, seq: int, dseq: int = 0) -> bool:
        """Acknowledge stream sequence `seq` (ack policy all / flow_control: and
        everything below); False if nothing changed."""
        ...

    def touch(self) -> None:
        """Client activity (for inactive_threshold)."""
        ...

    def recount(self) -> None:
        """Make `num_pending` exact."""
        ...


class Delivery(Protocol):
    """What the consumer asks of its delivery (pull.py, push.py)."""

    def run(self, hint: StoredMessage | None, budget: int) -> int:
        """Send what can go now, at most `budget` messages; returns the budget left.
        `hint` is a message just stored (saves a store read when it is next)."""
        ...

    def request(self, reply: str, payload: bytes) -> None:
        """A pull request (`CONSUMER.MSG.NEXT` or `+NXT`) answered to `reply`."""
        ...

    def reconfigure(self, config: ConsumerConfig) -> None: ...

    def close(self, *, notify: bool) -> None:
        """Stop: cancel timers, release subscriptions; with `notify` tell waiting
        clients the consumer is gone."""
        ...

    def ready(self) -> bool:
        """A message available now could go out (worth a `run` after an ack)."""
        ...

    def active(self) -> bool:
        """A client is there to receive (inactive_threshold counts from when not)."""
        ...

    @property
    def num_waiting(self) -> int: ...

    def bound(self) -> bool | None:
        """Consumer info's `push_bound` (None: not reported, a pull consumer)."""
        ...


def headers_only_block(headers: bytes | None, size: int) -> bytes:
    """The header block of a `headers_only` delivery: the message's own headers
    plus `Nats-Msg-Size` (the payload length); the payload is left out."""
    line = b"Nats-Msg-Size: %d\r\n" % size
    if not headers:
        return b"NATS/1.0\r\n" + line + b"\r\n"
    if headers.endswith(b"\r\n\r\n"):
        return headers[:-2] + line + b"\r\n"
    return headers + line + b"\r\n"
