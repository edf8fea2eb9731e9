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

Runs: new messages go out as runs where they can. `next_run` reads up to N
of them with one `StreamStore.read_run` (None when the next delivery must go
alone: a redelivery is due, `last_per_subject` has subjects left, replay
`original` paces them), `run_frames` describes them as a `DeliveryRun` (the
frames and ack replies they would go out with), `commit_run` records them
and `host.deliver_run` sends them to the target with one routed write. A
delivery sends one by one what needs a look at each message (headers only,
a pin header, a rate limit, a priority group's choice per message).

Hot path: `run` loops over runs (or messages) itself: per run it calls
`next_run`, `run_frames`, `commit_run` and `host.deliver_run`; per message
`next_message`, `commit` and `host.deliver`. The turn's budget is a local
counter, the headers-only frame is built inline.

Invariant: a delivery never changes consumer state except through `Source`;
a run holds only first deliveries (delivery count 1), consecutive in
consumer sequence, and its replies are exactly what `commit` would give each
message in turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Protocol

from jetstream_server.core.clock import Clock
from jetstream_server.core.protocol import format_literal, msg_formats
from jetstream_server.core.router import MessageHandler, OutboundRun
from jetstream_server.jetstream.consumer.config import ConsumerConfig
from jetstream_server.jetstream.consumer.cursor import Cursor
from jetstream_server.store.base import StoredMessage
from jetstream_server.store.runs import MessageRun, RunColumns

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

    def deliver_run(self, target: str, run: OutboundRun) -> None:
        """Route every message of `run` by `target` (one write to a single client)."""
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

    @property
    def num_to_deliver(self) -> int:
        """Messages still to deliver: the new ones (num pending) and the redeliveries due."""
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

    def next_run(self, limit: int, max_bytes: int = 0) -> MessageRun | None:
        """New messages to deliver as a run, read and not yet recorded: at most
        `limit` (and what `max_ack_pending` leaves room for), their stored sizes
        within `max_bytes` (0: no limit; `blocked_size` says what did not fit).
        Empty: nothing to deliver now. None: the next delivery must go alone
        (`next_message`)."""
        ...

    def run_frames(self, run: MessageRun) -> DeliveryRun:
        """How `run` (or a head of it) goes out: its ack replies from now on."""
        ...

    def commit_run(self, frames: DeliveryRun) -> None:
        """Record the deliveries of `frames` (`run_frames` of the last `next_run`,
        or its head)."""
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


class DeliveryRun:
    """First deliveries of consecutive new messages to one target: a
    `core.router.OutboundRun` over a store `MessageRun`.

    Message `i` goes out as consumer sequence `first_dseq + i` with the reply
    ``<ack prefix>1.<stream seq>.<consumer seq>.<timestamp>.<pending>``,
    pending being `num_pending` after it (`npc` before the run, less `i + 1`,
    never below 0): what `Consumer.commit` gives each message in turn.

    `wire_bytes(k)` is what the first `k` messages count as nats-server counts
    a pull's `max_bytes` (subject, ack reply, headers, payload), worked out
    from the run's stored sizes (`overhead`: the store's per-message bytes
    without and with headers) and the digits of the replies' numbers, without
    building a reply."""

    __slots__ = (
        "run", "ack_prefix", "first_dseq", "npc", "overhead", "_reply_format", "_reply_fixed",
        "_columns",
    )

    def __init__(
        self, run: MessageRun, ack_prefix: str, first_dseq: int, npc: int, overhead: tuple[int, int]
    ) -> None:
        self.run = run
        self.ack_prefix = ack_prefix
        self.first_dseq = first_dseq
        self.npc = npc
        self.overhead = overhead
        prefix = ack_prefix.encode()
        self._reply_format = format_literal(prefix) + b"1.%d.%d.%d.%d"
        self._reply_fixed = len(prefix) + 5  # "1." and the dots between the numbers
        self._columns: RunColumns | None = None

    @property
    def columns(self) -> RunColumns:
        """The run's `MessageRun.columns()` (built once)."""
        if self._columns is None:
            self._columns = self.run.columns()
        return self._columns

    def __len__(self) -> int:
        return len(self.run)

    def head(self, count: int) -> DeliveryRun:
        """The first `count` messages."""
        return DeliveryRun(self.run[:count], self.ack_prefix, self.first_dseq, self.npc, self.overhead)

    def reply(self, i: int) -> str:
        pending = max(self.npc - i - 1, 0)
        run = self.run
        return f"{self.ack_prefix}1.{run.seqs[i]}.{self.first_dseq + i}.{run[i].timestamp_ns}.{pending}"

    def wire_bytes(self, count: int | None = None) -> int:
        """Subject, ack reply, headers and payload bytes of the first `count`
        messages (all by default), exactly."""
        run = self.run
        n = len(run)
        k = n if count is None else count
        if k <= 0:
            return 0
        _subjects, seqs, timestamps, hlens, _bodies = self.columns
        sizes = run.sizes
        if k < n:  # a head: its parts of the columns (the whole run takes no copies)
            seqs, timestamps, hlens, sizes = seqs[:k], timestamps[:k], hlens[:k], sizes[:k]
        with_headers = k - hlens.count(0)
        plain, hdr = self.overhead
        content = sum(sizes) - (k - with_headers) * plain - with_headers * hdr
        if seqs[-1] - seqs[0] == k - 1:
            seq_digits = digits_total(seqs[0], seqs[-1])
        else:
            seq_digits = sum(map(len, map(str, seqs)))
        low, high = len(str(min(timestamps))), len(str(max(timestamps)))
        ts_digits = k * low if low == high else sum(map(len, map(str, timestamps)))
        counted = min(k, max(self.npc, 0))  # replies with pending above 0 (or the last 0)
        npc_digits = digits_total(self.npc - counted, self.npc - 1) if counted else 0
        npc_digits += k - counted  # "0" each
        dseq_digits = digits_total(self.first_dseq, self.first_dseq + k - 1)
        return content + k * self._reply_fixed + seq_digits + dseq_digits + ts_digits + npc_digits

    def fitting(self, max_bytes: int) -> tuple[int, int]:
        """How many messages from the first fit in `max_bytes` (`wire_bytes`), and their bytes."""
        total = self.wire_bytes()
        if total <= max_bytes:
            return len(self.run), total
        low, high = 0, len(self.run) - 1  # low fit; high + 1 does not
        while low < high:
            mid = (low + high + 1) // 2
            if self.wire_bytes(mid) <= max_bytes:
                low = mid
            else:
                high = mid - 1
        return low, self.wire_bytes(low)

    def encode(self, sid: bytes, headers: bool) -> tuple[bytes, int]:
        msg_format, hmsg_format = msg_formats(sid, self._reply_format)
        subjects, seqs, timestamps, hlens, bodies = self.columns
        out: list[bytes] = []
        append = out.append
        dseq = self.first_dseq
        npc = self.npc
        carried = 0
        last_subject: str | None = None
        subject_b = b""
        for i, body in enumerate(bodies):
            subject = subjects[i]
            if subject is not last_subject:
                subject_b = subject.encode("utf-8", "surrogateescape")
                last_subject = subject
            npc = npc - 1 if npc > 0 else 0
            hlen = hlens[i]
            size = len(body)
            if not hlen:
                append(msg_format % (subject_b, seqs[i], dseq, timestamps[i], npc, size, body))
            elif headers:
                append(hmsg_format % (subject_b, seqs[i], dseq, timestamps[i], npc, hlen, size, body))
            else:  # a client without headers gets the payload alone
                size -= hlen
                append(msg_format % (subject_b, seqs[i], dseq, timestamps[i], npc, size, body[hlen:]))
            carried += size
            dseq += 1
        return b"".join(out), carried

    def messages(self) -> Iterator[tuple[str, str | None, bytes | None, bytes]]:
        for i, msg in enumerate(self.run):
            yield msg.subject, self.reply(i), bytes(msg.headers) if msg.headers else None, bytes(msg.data)


def digits_total(low: int, high: int) -> int:
    """The decimal digits of every integer from `low` to `high` (both >= 0) together."""
    total = 0
    x = low
    width = len(str(x))
    while x <= high:
        end = min(high, 10**width - 1)
        total += (end - x + 1) * width
        x = end + 1
        width += 1
    return total
