"""Reading through an existing durable pull consumer (option `consumer`): the driver pulls.

An operator made the consumer; the reader may only ask for its info, pull
from it and acknowledge to it (docs/permissions.md). The connector never
creates, changes or deletes it. Executors cannot hand ack subjects back to
the driver, and an end offset needs the last sequence a batch holds, which
only a pull tells: so the driver pulls each micro-batch itself, keeps the
messages (`held`, by stream sequence, with their ack subjects) and hands them
to executors inside the input partitions (carried.py). Offsets stay stream
sequences in Spark's checkpoint.

`ConsumerFeed` (one stream, one consumer; driver memory only):
- `state()`: the consumer's info, checked (consumer_check.py) on every
  look, its filter compared with the first look's; `check_filter(recorded)`
  compares it with the filter a checkpoint's offset recorded.
- `start()`: where a new query starts: the consumer's ack floor (the
  consumer's deliver policy decided it).
- `plan(start, max_messages, max_bytes)`: acks what is held at or below
  `start` (committed: Spark plans a batch only after the one before it is in
  its commit log), makes sure every message the consumer holds pending is in
  hand (`_settle`), pulls up to the limits (`no_wait`: never waits), and
  returns the next batch's end (the highest stream sequence of its messages)
  and its message count (kept in the offset: a replay checks it).
- `batch(start, end, count)`: the messages of (start, end]; after a restart
  (the driver lost its memory) they are pulled again (`_settle` with the
  range as target) until `count` of them are in hand or nothing pending is
  left outside.
- `commit(end)`: acknowledges the held messages up to `end` (ack policy
  `all`: one ack of the highest; `explicit`: each one) as requests whose
  replies are awaited (consumer_pull.ack_sync), then forgets them.
- `pin()` (Trigger.AvailableNow on Spark 4.2+): what the consumer holds now
  (its delivered sequence, plus the `num_pending` messages still to
  deliver) is the run's target.
- `peek(...)` (batch reads): what the consumer would deliver next, then
  `-NAK`ed at once (due again for its other readers), never acknowledged.
- `release()` (the query stops): `-NAK`s what is held, so that the next run
  need not wait for the ack wait.

Invariant before any end is chosen: every message the consumer has delivered
and not had acknowledged is held (`num_ack_pending` equals what is held,
`_settle`), so a batch (start, end] holds every message of the consumer in
that range that the stream still has. Messages pending elsewhere (a crashed
run's) are taken back when they are due again: nats-server queues expired
pending messages for redelivery in stream-sequence order and serves that
queue before new messages (consumer.go `checkPending`, `getNextMsg`; the
bundled server's ack tracker does the same). The wait is bounded by the
consumer's redelivery wait (its `ack_wait` or largest `backoff` step) since
its last delivery, plus `GRACE_S`; past that, `ConsumerStalledError` (another
client pulls from the consumer?). A redelivered message at or below the
batch's start was committed (its ack was lost with the crash): acknowledged
and dropped. One above the batch is kept for a later batch.

Bounds: a batch holds at most `max_messages` messages and `max_bytes` bytes
(defaults `BATCH_MESSAGES`, `BATCH_BYTES`), and never more than the
consumer's `max_ack_pending` allows. Everything held is pending on the
server: a pull never asks for more than `max_ack_pending` leaves room for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from spark_jetstream.client import LeanConnection, NatsError
from spark_jetstream.options import ReadOptions
from spark_jetstream.read.consumer_check import (
    ConsumerRefusedError,
    ConsumerSettings,
    check_consumer,
    refuse_changed_filter,
)
from spark_jetstream.read.consumer_pull import Delivered, ack_sync, nak, pull
from spark_jetstream.read.durable import consumer_info
from spark_jetstream.read.fetch import rfc3339_ns

__all__ = [
    "BATCH_BYTES",
    "BATCH_MESSAGES",
    "ConsumerFeed",
    "ConsumerState",
    "ConsumerStalledError",
    "PeekTooLargeError",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

BATCH_MESSAGES: Final = 100_000  # default messages per micro-batch (maxMessagesPerTrigger lowers it)
BATCH_BYTES: Final = 32 * 1024 * 1024  # default bytes per micro-batch (maxBytesPerTrigger changes it)
PULL_BATCH: Final = 10_000  # messages per pull request
PULL_WAIT_S: Final = 2.0  # longest wait of one pull request for a redelivery
GRACE_S: Final = 10.0  # beyond the redelivery wait: timers, a loaded server
NEW_ONLY_PAUSE_S: Final = 0.2  # redeliveries not due yet: pause before pulling again


class ConsumerStalledError(RuntimeError):
    """Messages pending on the consumer were not delivered again within the redelivery wait."""


class PeekTooLargeError(ValueError):
    """A batch read through a consumer would hold more than the driver's bound."""


@dataclass(frozen=True, slots=True)
class ConsumerState:
    """The part of `CONSUMER.INFO` the feed follows."""

    num_ack_pending: int
    num_pending: int
    delivered_seq: int
    ack_floor: int
    idle_s: float | None  # since the last delivery, by the server's clock (None: unknown)

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> ConsumerState:
        delivered = info.get("delivered") or {}
        last, now = delivered.get("last_active"), info.get("ts")
        idle = max(0.0, (rfc3339_ns(str(now)) - rfc3339_ns(str(last))) / 1e9) if last and now else None
        return cls(
            num_ack_pending=int(info.get("num_ack_pending", 0)),
            num_pending=int(info.get("num_pending", 0)),
            delivered_seq=int(delivered.get("stream_seq", 0)),
            ack_floor=int((info.get("ack_floor") or {}).get("stream_seq", 0)),
            idle_s=idle,
        )


@dataclass(slots=True)
class _Pin:
    """Trigger.AvailableNow: the run reads up to `target`, and `new_left` first deliveries beyond it."""

    target: int
    new_left: int


class ConsumerFeed:
    """The driver's reads through one consumer on one stream (see the module doc)."""

    def __init__(
        self,
        options: ReadOptions,
        call: Callable[[Callable[[LeanConnection], Any]], Any],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        assert options.consumer is not None
        self.stream = options.stream
        self.consumer = options.consumer
        self.subjects = options.subjects
        self.held: dict[int, Delivered] = {}
        self._call = call
        self._clock = clock
        self._sleep = sleep
        self._timeout_s = options.connection.request_timeout_s
        self._settings: ConsumerSettings | None = None
        self._pin: _Pin | None = None
        self._probed = False
        self._pulled_at: dict[int, float] = {}  # batch end -> when its messages were in hand
        self._warned_slow = False
        self._clamped = False

    @property
    def where(self) -> str:
        return f"consumer {self.consumer!r} on stream {self.stream!r}"

    # -- the consumer's state ---------------------------------------------------------------
    def state(self) -> ConsumerState:
        info = self._call(lambda c: consumer_info(c, self.stream, self.consumer))
        if info is None:
            raise ConsumerRefusedError(
                f"{self.where} not found (option consumer): the connector reads through a consumer an "
                "operator made and never creates one; see docs/permissions.md"
            )
        # checked on every look: an operator may change the consumer while the query runs
        settings, warnings = check_consumer(info, self.stream, self.consumer, self.subjects)
        if self._settings is None:
            for warning in warnings:
                log.warning("%s", warning)
        else:
            refuse_changed_filter(self.stream, self.consumer, self._settings.filters, settings.filters,
                                  "when this query started")
        self._settings = settings
        return ConsumerState.from_info(info)

    def check_filter(self, recorded: tuple[str, ...] | None) -> None:
        """Refuse the consumer when its filter is not the one a checkpoint `recorded` (None: none)."""
        refuse_changed_filter(self.stream, self.consumer, recorded, self.settings.filters,
                              "when the query's checkpoint was written")

    @property
    def settings(self) -> ConsumerSettings:
        if self._settings is None:
            self.state()
        assert self._settings is not None
        return self._settings

    def start(self) -> int:
        """Where a new query starts: after the consumer's ack floor."""
        floor = self.state().ack_floor
        log.info("%s: the query starts after its ack floor, sequence %d", self.where, floor)
        return floor

    def pin(self) -> None:
        """Trigger.AvailableNow: read what the consumer holds now, nothing delivered later."""
        state = self.state()
        self._pin = _Pin(state.delivered_seq, state.num_pending)
        log.info("Trigger.AvailableNow through %s: up to sequence %d and the %d messages it has yet to "
                 "deliver", self.where, state.delivered_seq, state.num_pending)

    def available(self, start: int) -> int:
        """Messages a batch after `start` could hold now (minMessagesPerTrigger)."""
        return self.state().num_pending + len(self._ahead(start))

    # -- micro-batches ----------------------------------------------------------------------
    def plan(self, start: int, max_messages: int, max_bytes: int) -> tuple[int, int]:
        """(end, count) of the next batch after `start`; (start, 0) when there is nothing."""
        self.commit(start)
        state = self._settle(start)
        ahead = self._ahead(start)
        room = max_messages - len(ahead)
        room_bytes = max_bytes - sum(m.size for m in ahead)
        maxp = self.settings.max_ack_pending
        if maxp and room > maxp - state.num_ack_pending:
            room = maxp - state.num_ack_pending
            if not self._clamped:
                self._clamped = True
                log.info("%s: max_ack_pending %d holds micro-batches to fewer messages than the bound %d",
                         self.where, maxp, max_messages)
        if self._pin is not None:
            room = min(room, self._pin.new_left)
        if room > 0 and room_bytes > 0 and state.num_pending > 0:
            self._pull_new(start, room, room_bytes)
            self._settle(start)  # another client took messages meanwhile? (never ours to skip)
            ahead = self._ahead(start)
        taken, size = 0, 0
        for m in ahead:
            if taken and (taken >= max_messages or size + m.size > max_bytes):
                break
            taken += 1
            size += m.size
        if not taken:
            return start, 0
        end = ahead[taken - 1].seq
        self._pulled_at[end] = self._clock()
        return end, taken

    def batch(self, start: int, end: int, count: int | None) -> list[Delivered]:
        """The messages of (start, end] (pulled again after a restart; fewer than `count` when the
        stream lost some meanwhile)."""
        have = self._range(start, end)
        if count is None or len(have) != count:
            self.commit(start)
            self._settle(start, end, count)
            have = self._range(start, end)
            self._pulled_at.setdefault(end, self._clock())
        return have

    def commit(self, end: int) -> None:
        """Acknowledge what is held up to `end` (committed) and forget it."""
        done = sorted(s for s in self.held if s <= end)
        if not done:
            return
        self._ack([self.held[s] for s in done])
        for s in done:
            del self.held[s]
        for planned in [e for e in self._pulled_at if e <= end]:
            took = self._clock() - self._pulled_at.pop(planned)
            if took > self.settings.ack_wait_s and not self._warned_slow:
                self._warned_slow = True
                log.warning(
                    "%s: a micro-batch took %.1fs from pull to commit, longer than the consumer's ack_wait "
                    "(%gs): its messages fell due for redelivery meanwhile (recognised by sequence, never read "
                    "twice, but counted as redelivered); a longer ack_wait avoids that",
                    self.where, took, self.settings.ack_wait_s,
                )

    def release(self) -> None:
        """The query stops: what is held is due again at once (`-NAK`), for the next run."""
        if self.held:
            replies = [m.reply for m in self.held.values()]
            self.held.clear()
            try:
                self._call(lambda c: nak(c, replies))
            except (OSError, NatsError) as exc:  # best effort: they fall due after the ack wait
                log.info("%s: could not hand back %d messages (%s)", self.where, len(replies), exc)

    # -- batch reads --------------------------------------------------------------------------
    def peek(self, end: int | None, end_ts_ms: int | None, max_messages: int, max_bytes: int) -> list[Delivered]:
        """What the consumer would deliver next (up to sequence `end`, before `end_ts_ms`), never
        acknowledged: `-NAK`ed as soon as it is in hand."""
        state = self.state()
        maxp = self.settings.max_ack_pending
        pulled: list[Delivered] = []
        got: dict[int, Delivered] = {}
        size = 0
        try:
            while True:
                room = maxp - state.num_ack_pending - len(pulled) if maxp else PULL_BATCH
                if room <= 0:
                    if self.state().num_pending > 0:
                        raise PeekTooLargeError(
                            f"a batch read through {self.where} shows at most its max_ack_pending ({maxp}) "
                            "messages and it has more to deliver: narrow the read with endingOffsets or "
                            "endingTimestamp, or read it with readStream"
                        )
                    break
                asked = self._request_batch(room)
                msgs = self._pull(batch=asked)
                pulled += msgs
                past = False
                for m in msgs:
                    if (end is not None and m.seq > end) or (end_ts_ms is not None and m.ts_ns >= end_ts_ms * 10**6):
                        past = True
                    elif m.seq not in got:
                        got[m.seq] = m
                        size += m.size
                if len(got) > max_messages or size > max_bytes:
                    raise PeekTooLargeError(
                        f"a batch read through {self.where} holds what it reads in driver memory, at most "
                        f"{max_messages} messages and {max_bytes} bytes, and the consumer has more to deliver: "
                        "narrow the read with endingOffsets or endingTimestamp, or read it with readStream "
                        "(trigger availableNow), which reads it in micro-batches"
                    )
                if past or len(msgs) < asked:
                    break
        finally:
            if pulled:
                replies = [m.reply for m in pulled]
                self._call(lambda c: nak(c, replies))
        return [got[s] for s in sorted(got)]

    # -- internals ------------------------------------------------------------------------------
    def _ahead(self, start: int) -> list[Delivered]:
        """Held messages after `start` a batch may take (up to the AvailableNow target), in order."""
        limit = self._pin.target if self._pin is not None else None
        return [self.held[s] for s in sorted(self.held) if s > start and (limit is None or s <= limit)]

    def _range(self, start: int, end: int) -> list[Delivered]:
        return [self.held[s] for s in sorted(self.held) if start < s <= end]

    def _request_batch(self, room: int) -> int:
        limit = self.settings.max_request_batch
        return max(1, min(room, PULL_BATCH, limit) if limit else min(room, PULL_BATCH))

    def _pull(self, *, batch: int, max_bytes: int = 0, expires_s: float = 0.0) -> list[Delivered]:
        limit = self.settings.max_request_bytes
        if limit and (max_bytes <= 0 or max_bytes > limit):
            max_bytes = limit
        wait = expires_s
        if wait and self.settings.max_request_expires_s:
            wait = min(wait, self.settings.max_request_expires_s)
        return self._call(  # type: ignore[no-any-return]
            lambda c: pull(c, self.stream, self.consumer, batch=batch, max_bytes=max_bytes, expires_s=wait,
                           timeout_s=self._timeout_s)
        )

    def _ack(self, msgs: list[Delivered], payload: bytes = b"") -> None:
        replies = [msgs[-1].reply] if self.settings.ack_all and not payload else [m.reply for m in msgs]
        self._call(lambda c: ack_sync(c, replies, stream=self.stream, consumer=self.consumer, payload=payload,
                                      timeout_s=self._timeout_s))

    def _take(self, start: int, msgs: list[Delivered]) -> int:
        """Hold what a pull delivered; acknowledge what is at or below `start` (committed before,
        its ack lost). Returns how many were first deliveries."""
        if msgs and not self._probed:
            # the ack right, checked before anything of this run is written (+WPI changes nothing else)
            self._ack(msgs[:1], b"+WPI")
            self._probed = True
        stale = []
        first = 0
        for m in msgs:
            if m.deliveries == 1:
                first += 1
            if m.seq <= start:
                stale.append(m)
                continue
            pin = self._pin
            if pin is not None and m.deliveries == 1 and m.seq > pin.target and m.seq not in self.held and pin.new_left:
                pin.new_left -= 1
                pin.target = m.seq
            self.held[m.seq] = m  # a redelivery of a held message: its newer ack subject
        if stale:
            log.info("%s: %d messages at or below the committed sequence %d came again (acks lost with a "
                     "crash): acknowledged, not read again", self.where, len(stale), start)
            self._ack(sorted(stale, key=lambda m: m.seq))
        return first

    def _pull_new(self, start: int, room: int, room_bytes: int) -> None:
        while room > 0 and room_bytes > 0:
            asked = self._request_batch(room)
            msgs = self._pull(batch=asked, max_bytes=room_bytes)
            if not msgs and not self._ahead(start):
                msgs = self._pull(batch=1)  # one message larger than the byte room: take it alone
            self._take(start, msgs)
            fresh = [m for m in msgs if m.seq > start]
            room -= len(fresh)
            room_bytes -= sum(m.size for m in fresh)
            if len(msgs) < asked:
                return

    def _settle(self, start: int, end: int | None = None, count: int | None = None) -> ConsumerState:
        """Make every message the consumer holds pending (and, with `end`, every message up to `end`)
        be in hand; see the module doc."""
        due_at: float | None = None
        deadline = 0.0
        try_now = True  # what a stopped run or a batch read handed back (-NAK) is due at once
        while True:
            state = self.state()
            if end is not None and count is not None and len(self._range(start, end)) >= count:
                return state
            missing = state.num_ack_pending - len(self.held)
            if missing <= 0:
                if end is None or state.delivered_seq >= end:
                    return state
                # the consumer has not delivered up to the range's end (its state was reset or lost):
                # deliver on until past it
                if not self._take(start, self._pull(batch=self._request_batch(max(1, end - start)))):
                    return state
                continue
            now = self._clock()
            wait_s = self.settings.redelivery_wait_s
            if due_at is None:
                idle = state.idle_s if state.idle_s is not None else 0.0
                due_at = now + max(0.0, wait_s - idle)
                deadline = due_at + wait_s + GRACE_S
                log.info("%s: %d delivered messages are pending outside this run (a previous run's?): "
                         "pulling them again, due in %.1fs at the latest", self.where, missing, due_at - now)
            if now >= deadline:
                raise ConsumerStalledError(
                    f"{self.where}: {missing} messages it delivered earlier are still pending, not delivered "
                    f"again within {wait_s + GRACE_S:g}s after they were due (the consumer's redelivery wait "
                    f"is {wait_s:g}s): another client may be pulling from it; the consumer must be read by "
                    "this query alone"
                )
            if now < due_at and not try_now:
                self._sleep(min(due_at, deadline) - now)
                continue
            due = now >= due_at
            msgs = self._pull(batch=self._request_batch(missing),
                              expires_s=min(PULL_WAIT_S, deadline - now) if due else 0.0)
            first = self._take(start, msgs)
            try_now = first < len(msgs)  # redeliveries came: more may be due
            if due and msgs and not try_now:
                self._sleep(NEW_ONLY_PAUSE_S)  # only new messages: the pending ones are not due yet
