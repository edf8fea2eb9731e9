"""The ack tracker of a consumer: what was delivered and is not acknowledged yet.

State, named as in nats-server:
- `pending`: stream_seq -> `Pending` for delivered, unacknowledged messages
  (ack explicit / all), keeping the first delivery's consumer sequence.
  Insertion order is ascending stream sequence (first deliveries happen in
  order; redeliveries update entries in place).
- `ack floor` `(adflr, asflr)`: everything at or below is acknowledged.
- `rdc`: stream_seq -> delivery count, only for messages delivered twice or
  more (`num_redelivered` = its size); `rdq`: sequences due for redelivery,
  first in first out.
- `dropped`: sequences that reached `max_deliver`; they leave `pending` but
  hold the ack floor, as in nats-server.

Policies: ack `none` (a delivery is its own ack: the floor follows it), `all`
(an ack acknowledges everything pending at or below it), `explicit`,
`flow_control` (as `all`, the acks coming from flow control answers; nothing
is ever due again: no ack wait). A
delivery is due again after `ack_wait`, or after `backoff[n-1]` for its n-th
delivery; `-NAK` (optionally delayed), `+WPI` (progress: the wait restarts)
and `+TERM` (never again) act on one pending message.

Effects outside: `stream.acknowledged(seq)` for each acknowledged message when
the stream's retention is not limits; `on_change()` whenever the state to
persist changed (the consumer schedules a write); `on_due()` when the
redelivery timer found messages due (the consumer delivers). The tracker
reads the cursor (`dseq`, `sseq`) to move the floor when nothing is pending;
it never moves the cursor. Time comes from the injected clock.

For incremental state writes the tracker notes what changed since the
consumer last wrote its state: `touched` holds every stream sequence whose
`pending`, `rdc` or `dropped` entry changed one at a time (the hot paths:
deliver, ack, term, progress, max_deliver drops); `rewrite_all` is set by the
bulk changes (reset, dropped entries forgotten), which the consumer
writes as a whole state. The consumer clears both once written.

Deadlines sit in a heap of `(due_ns, seq)`, so the redelivery timer looks
only at what fell due (not at every pending message, 50k of them a tick):
an entry is pushed whenever a deadline is set and is stale once the message
left `pending` or got another deadline (skipped when popped; the heap is
rebuilt from `pending` when stale entries outnumber live ones).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.jetstream.consumer.config import DEFAULT_ACK_WAIT_NS, ConsumerConfig
from jetstream_server.jetstream.consumer.cursor import Cursor
from jetstream_server.jetstream.seams import StreamForConsumers
from jetstream_server.store.base import StoredMessage

NS = 1_000_000_000
NEVER_DUE_NS = 1 << 62  # about 146 years


@dataclass(slots=True)
class Pending:
    consumer_seq: int
    timestamp_ns: int  # last delivery
    due_ns: int  # when it is redelivered unless acked


class AckTracker:
    """Pending messages, the ack floor and redeliveries of one consumer."""

    def __init__(
        self,
        clock: Clock,
        stream: StreamForConsumers,
        cursor: Cursor,
        config: ConsumerConfig,
        *,
        on_change: Callable[[], None],
        on_due: Callable[[], None],
    ) -> None:
        self.clock = clock
        self.stream = stream
        self.cursor = cursor
        self._on_change = on_change
        self._on_due = on_due
        self.pending: dict[int, Pending] = {}
        self.adflr = 0
        self.asflr = 0
        self.rdc: dict[int, int] = {}
        self.rdq: deque[int] = deque()
        self._rdq_set: set[int] = set()
        self.dropped: set[int] = set()
        self.touched: set[int] = set()  # see the module docstring
        self.rewrite_all = False
        self.last_ack_ns = 0  # the last +ACK (consumer info's ack_floor.last_active)
        self.last_active_ns = 0  # the last ack, nak, progress or term (inactive_threshold)
        self._timer: TimerHandle | None = None
        self._timer_due = 0
        self._deadlines: list[tuple[int, int]] = []  # heap of (due_ns, seq); see docstring
        self._closed = False
        # (stream seq, deliveries) of a message dropped at max_deliver: the advisory
        self.on_max_deliveries: Callable[[int, int], None] | None = None
        self.configure(config)

    def configure(self, config: ConsumerConfig) -> None:
        self.ack_none = config.ack_policy == "none"
        self.ack_all = config.ack_policy in ("all", "flow_control")
        self.ack_wait = config.ack_wait_ns or DEFAULT_ACK_WAIT_NS
        if config.ack_policy == "flow_control":
            self.ack_wait = NEVER_DUE_NS  # nats-server: no ack wait, no redelivery
        self.backoff = config.backoff_ns
        self.max_deliver = config.max_deliver
        # 0 = no limit on unacknowledged deliveries (ack none never has one)
        self.max_ack_pending = 0 if self.ack_none else max(config.max_ack_pending, 0)

    def ack_wait_ns(self, delivery_count: int) -> int:
        backoff = self.backoff
        if backoff:
            return backoff[min(max(delivery_count, 1), len(backoff)) - 1]
        return self.ack_wait

    # -- set-up --------------------------------------------------------------------
    def start(self, asflr: int) -> None:
        """A new consumer: everything below its start counts as acknowledged."""
        self.adflr = 0
        self.asflr = asflr

    def restore(
        self,
        adflr: int,
        asflr: int,
        pending: Iterable[tuple[int, int, int]],
        redelivered: Iterable[tuple[int, int]],
        dropped: Iterable[int],
    ) -> None:
        """Saved state back: pending entries are due one ack wait after their last
        delivery (now at the earliest)."""
        self.adflr = adflr
        self.asflr = asflr
        now = self.clock.now_ns()
        for seq, dseq, ts in sorted(pending):
            self.pending[seq] = Pending(dseq, ts, max(ts + self.ack_wait_ns(1), now))
        self.rdc = dict(redelivered)
        for seq, count in self.rdc.items():
            entry = self.pending.get(seq)
            if entry is not None:
                entry.due_ns = max(entry.timestamp_ns + self.ack_wait_ns(count), now)
        self.dropped = set(dropped)
        self._rebuild_deadlines()
        if self.pending:
            self._arm_timer(self._deadlines[0][0])

    def reset(self, asflr: int) -> None:
        """CONSUMER.RESET: nothing pending or due, the floor just below the new start."""
        self.pending.clear()
        self.rdc.clear()
        self.rdq.clear()
        self._rdq_set.clear()
        self.dropped.clear()
        self.rewrite_all = True
        self._deadlines.clear()
        self._cancel_timer()
        self.adflr = 0
        self.asflr = asflr

    def close(self) -> None:
        self._closed = True
        self._cancel_timer()

    # -- deliveries (hot path) -----------------------------------------------------
    def track(self, seq: int, dseq: int, dc: int, now: int) -> None:
        """Record a delivery of `seq` as consumer sequence `dseq`, the `dc`-th."""
        if dc > 1:
            self.rdc[seq] = dc
        if self.ack_none:
            self.adflr = dseq
            self.asflr = seq
            if self.stream.config.retention != "limits":
                self.stream.acknowledged(seq)
            return
        backoff = self.backoff
        due = now + (backoff[min(dc, len(backoff)) - 1] if backoff else self.ack_wait)
        self.touched.add(seq)
        entry = self.pending.get(seq)
        if entry is None:
            self.pending[seq] = Pending(dseq, now, due)
        else:
            # nats-server keeps the first delivery's consumer sequence (ack floors use it)
            entry.timestamp_ns = now
            entry.due_ns = due
        self._push_deadline(due, seq)
        if self._timer is None or self._timer_due > due:
            self._arm_timer(due)

    def track_run(self, seqs: Sequence[int], first_dseq: int, now: int) -> None:
        """Record first deliveries of `seqs` (ascending) as consumer sequences
        from `first_dseq` on: `track` of each in turn."""
        if not seqs:
            return
        if self.ack_none:
            self.adflr = first_dseq + len(seqs) - 1
            self.asflr = seqs[-1]
            if self.stream.config.retention != "limits":
                acknowledged = self.stream.acknowledged
                for seq in seqs:
                    acknowledged(seq)
            return
        backoff = self.backoff
        due = now + (backoff[0] if backoff else self.ack_wait)
        pending = self.pending
        deadlines = self._deadlines
        push = heapq.heappush
        dseq = first_dseq
        for seq in seqs:
            entry = pending.get(seq)
            if entry is None:
                pending[seq] = Pending(dseq, now, due)
            else:
                entry.timestamp_ns = now
                entry.due_ns = due
            push(deadlines, (due, seq))
            dseq += 1
        self.touched.update(seqs)
        if len(deadlines) > 2 * len(pending) + 1024:
            self._rebuild_deadlines()
        if self._timer is None or self._timer_due > due:
            self._arm_timer(due)

    def next_redelivery(self) -> tuple[StoredMessage, int] | None:
        """The next message due again and its delivery count (taken off `rdq`).

        Messages past `max_deliver` are dropped on the way, messages gone from
        the stream forgotten."""
        rdq = self.rdq
        while rdq:
            seq = rdq.popleft()
            self._rdq_set.discard(seq)
            if seq not in self.pending:
                continue
            dc = self.rdc.get(seq, 1) + 1
            if self.max_deliver > 0 and dc > self.max_deliver:
                del self.pending[seq]
                self.dropped.add(seq)
                self.touched.add(seq)
                self._on_change()
                if self.on_max_deliveries is not None:
                    self.on_max_deliveries(seq, dc - 1)
                continue
            msg = self.stream.store.load(seq)
            if msg is None:
                del self.pending[seq]
                self.rdc.pop(seq, None)
                self.touched.add(seq)
                self._floor_after_removal()
                continue
            return msg, dc
        return None

    def unget(self, seq: int, dc: int) -> None:
        """A redelivery `next_redelivery` returned was not sent: first in line again."""
        if dc > 1:
            self.rdq.appendleft(seq)
            self._rdq_set.add(seq)

    # -- acknowledgements ------------------------------------------------------------
    def ack(self, seq: int, dseq: int = 0) -> bool:
        """+ACK (or empty) for stream sequence `seq` (`dseq`: the consumer sequence
        of the delivery acked, from the ack subject); False if nothing changed."""
        now = self.clock.now_ns()
        self.last_ack_ns = now
        self.last_active_ns = now
        if self.ack_none:
            return False
        if self.ack_all:
            return self._ack_up_to(seq, dseq)
        entry = self.pending.pop(seq, None)
        if entry is None:
            return False
        self.rdc.pop(seq, None)
        self.touched.add(seq)
        self._floor_after_ack(entry.consumer_seq, seq)
        if self.stream.config.retention != "limits":
            self.stream.acknowledged(seq)
        self._on_change()
        return True

    def term(self, seq: int, dseq: int = 0) -> bool:
        """+TERM: never deliver `seq` again (acknowledged as far as the floor goes)."""
        if self.ack_none:
            return False
        if self.ack_all:
            return self._ack_up_to(seq, dseq)
        entry = self.pending.pop(seq, None)
        self.last_active_ns = self.clock.now_ns()
        if entry is None:
            return False
        self.rdc.pop(seq, None)
        self.touched.add(seq)
        self._floor_after_ack(entry.consumer_seq, seq)
        if self.stream.config.retention != "limits":
            self.stream.acknowledged(seq)
        self._on_change()
        return True

    def nak(self, seq: int, delay_ns: int = 0) -> bool:
        """-NAK: redeliver `seq` after `delay_ns` (its backoff step, if any, when 0).
        True when it is due right away."""
        entry = self.pending.get(seq)
        if entry is None or self.ack_none:
            return False
        now = self.clock.now_ns()
        self.last_active_ns = now
        if delay_ns <= 0 and self.backoff:
            delay_ns = self.ack_wait_ns(self.rdc.get(seq, 1))
        if delay_ns > 0:
            entry.due_ns = now + delay_ns
            self._push_deadline(entry.due_ns, seq)
            self._arm_timer(entry.due_ns)
            return False
        self._queue(seq)
        return True

    def progress(self, seq: int) -> None:
        """+WPI: the ack wait of `seq` starts again."""
        entry = self.pending.get(seq)
        if entry is None:
            return
        now = self.clock.now_ns()
        self.last_active_ns = now
        entry.timestamp_ns = now
        self.touched.add(seq)
        entry.due_ns = now + self.ack_wait_ns(self.rdc.get(seq, 1))
        self._push_deadline(entry.due_ns, seq)
        self._arm_timer(entry.due_ns)

    def _ack_up_to(self, seq: int, dseq: int = 0) -> bool:
        """Ack policy all: everything pending at or below `seq` (nats-server: the
        floor becomes that delivery; an ack at or below the floor is a no-op)."""
        entry = self.pending.get(seq)
        if entry is None:
            return False
        dseq = dseq or entry.consumer_seq
        if dseq <= self.adflr:
            return False
        acked = []
        for s in self.pending:  # ascending
            if s > seq:
                break
            acked.append(s)
        for s in acked:
            del self.pending[s]
            self.rdc.pop(s, None)
        self.touched.update(acked)
        if self.dropped:
            kept = {s for s in self.dropped if s > seq}
            if len(kept) != len(self.dropped):
                self.dropped = kept
                self.rewrite_all = True
        self.adflr, self.asflr = dseq, max(self.asflr, seq)
        if self.stream.config.retention != "limits":
            for s in acked:
                self.stream.acknowledged(s)
        self._on_change()
        return True

    def _floor_after_ack(self, dseq: int, sseq: int) -> None:
        """nats-server's rule: with nothing pending the floor is what was delivered;
        otherwise it moves only when the ack is for the delivery right above the
        floor, up to just below the next pending message after it."""
        if not self.pending:
            self.adflr = self.cursor.dseq
            self.asflr = self.cursor.sseq - 1
            return
        if dseq != self.adflr + 1:
            return
        self.adflr, self.asflr = dseq, sseq
        # pending keys are in ascending order: the first one above `sseq` is the
        # next unacknowledged message (usually the very first key).
        for nxt in self.pending:
            if nxt > sseq:
                self.adflr = self.pending[nxt].consumer_seq - 1
                self.asflr = nxt - 1
                break

    def _floor_after_removal(self) -> None:
        """Pending entries vanished (purge, message gone): with none left the
        floor catches up with what was delivered."""
        cursor = self.cursor
        if not self.pending and cursor.sseq - 1 > self.asflr:
            self.adflr = max(self.adflr, cursor.dseq)
            self.asflr = cursor.sseq - 1

    # -- stream changes ----------------------------------------------------------------
    def on_purged(self, first_seq: int, removed: Sequence[int] | None = ()) -> None:
        """Messages below `first_seq` are gone from the stream, and those in
        `removed` (a subject purge's; None: unknown, every pending message is
        checked against the store).

        Costs what it removes, not what is pending: pending entries below
        `first_seq` are a prefix (ascending keys), the removed sequences are
        looked up one by one, and the state write is a delta of the entries
        that went (a whole state only when `dropped` changed)."""
        pending, rdc, touched = self.pending, self.rdc, self.touched
        gone: list[int] = []
        for seq in pending:  # ascending: stop at the first one still in the stream
            if seq >= first_seq:
                break
            gone.append(seq)
        if removed is None:
            load = self.stream.store.load
            gone.extend(s for s in pending if s >= first_seq and load(s) is None)
        elif len(removed) <= len(pending):
            gone.extend(s for s in removed if s >= first_seq and s in pending)
        else:  # fewer pending than removed: look the other way round
            removed_set = set(removed)
            gone.extend(s for s in pending if s >= first_seq and s in removed_set)
        for seq in gone:
            del pending[seq]
            rdc.pop(seq, None)
        touched.update(gone)
        dropped = self.dropped
        if dropped:
            kept = {s for s in dropped if s >= first_seq}
            if removed:
                kept.difference_update(removed)
            if len(kept) != len(dropped):
                for seq in dropped - kept:
                    rdc.pop(seq, None)
                self.dropped = kept
                self.rewrite_all = True  # a delta cannot take entries out of `dropped`
        if self.asflr < first_seq - 1:
            self.asflr = first_seq - 1
        self._floor_after_removal()

    # -- redelivery timer ----------------------------------------------------------------
    def _queue(self, seq: int) -> None:
        # First in, first out, as nats-server's redelivery queue (expired
        # messages are queued in stream order by `_check_pending`).
        if seq not in self._rdq_set:
            self._rdq_set.add(seq)
            self.rdq.append(seq)

    def _arm_timer(self, due_ns: int) -> None:
        if self._closed:
            return
        if self._timer is not None and self._timer_due <= due_ns:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_due = due_ns
        delay = max(due_ns - self.clock.now_ns(), 0) / NS
        self._timer = self.clock.call_later(delay, self._check_pending)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _push_deadline(self, due_ns: int, seq: int) -> None:
        deadlines = self._deadlines
        heapq.heappush(deadlines, (due_ns, seq))
        if len(deadlines) > 2 * len(self.pending) + 1024:
            self._rebuild_deadlines()  # mostly acknowledged messages: amortised O(1)

    def _rebuild_deadlines(self) -> None:
        self._deadlines = [(entry.due_ns, seq) for seq, entry in self.pending.items()]
        heapq.heapify(self._deadlines)

    def _check_pending(self) -> None:
        """The timer: queue what fell due (in stream order, as nats-server), re-arm
        for the next deadline. Costs what is due plus stale entries, not `pending`."""
        self._timer = None
        if self._closed:
            return
        now = self.clock.now_ns()
        deadlines = self._deadlines
        pending = self.pending
        expired: list[int] = []
        while deadlines and deadlines[0][0] <= now:
            due, seq = heapq.heappop(deadlines)
            entry = pending.get(seq)
            if entry is None or entry.due_ns != due or seq in self._rdq_set:
                continue  # stale: acknowledged, re-armed, or already queued
            expired.append(seq)
        for seq in sorted(expired):
            self._queue(seq)
        while deadlines:
            due, seq = deadlines[0]
            entry = pending.get(seq)
            if entry is not None and entry.due_ns == due:
                self._arm_timer(due)
                break
            heapq.heappop(deadlines)
        if expired:
            self._on_due()
