"""The consumer: a cursor, an ack tracker and one delivery, driven together.

One `Consumer` per (stream, name). It is a `StreamListener` (seams.py): the
stream tells it about new and purged messages. Its parts:
- `cursor` (cursor.py): which message goes out next for the first time
  (start policy, filters, delivered sequences, `num_pending`);
- `acks` (ack_tracker.py): what is delivered and not acknowledged (pending,
  ack floor, redeliveries, ack policies, backoff, max_deliver);
- `delivery` (delivery.py): `PullDelivery` (pull.py) or `PushDelivery`
  (push.py), the same shape; the consumer runs it whenever something may be
  deliverable and it takes messages through `next_message` / `commit`.
The consumer itself owns what spans the parts: the delivery loop
(`kick`, a budget per loop turn), replay pacing, pause, inactivity, the
durable state file (consumer/store.py) and consumer info.

Acks arrive through acks.py (`ack`, `nak`, `progress`, `term` here, which
hand them to the tracker and wake the delivery when a slot freed).

Time comes only from the injected clock. Everything runs on the loop thread;
delivery is re-entrancy safe (`kick` loops while asked again).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from jetstream_server.core.clock import TimerHandle
from jetstream_server.jetstream import advisories
from jetstream_server.jetstream.consumer.ack_tracker import AckTracker
from jetstream_server.jetstream.consumer.config import ConsumerConfig, format_time
from jetstream_server.jetstream.consumer.cursor import Cursor
from jetstream_server.jetstream.consumer.delivery import NS, ConsumerHost, Delivery, DeliveryRun
from jetstream_server.jetstream.consumer.priority import group_states
from jetstream_server.jetstream.consumer.pull import PullDelivery
from jetstream_server.jetstream.consumer.push import PushDelivery
from jetstream_server.jetstream.consumer.store import ConsumerState, ConsumerStore
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.seams import StreamForConsumers
from jetstream_server.store.base import StoredMessage
from jetstream_server.store.runs import ListRun, MessageRun

logger = logging.getLogger(__name__)

RUN_BUDGET = 2048  # deliveries per event-loop turn and consumer


class Consumer:
    """A durable or ephemeral consumer of one stream."""

    def __init__(
        self,
        host: ConsumerHost,
        stream: StreamForConsumers,
        config: ConsumerConfig,
        *,
        name: str,
        created_ns: int | None = None,
        state: ConsumerState | None = None,
        store: ConsumerStore | None = None,
    ) -> None:
        self.host = host
        self.clock = host.clock
        self.stream = stream
        self.stream_name = stream.name
        self.name = name
        self.config = config
        self.created_ns = created_ns if created_ns is not None else self.clock.now_ns()
        self.store = store
        self._ack_prefix = f"$JS.ACK.{stream.name}.{name}."
        self._closed = False
        self._in_deliver = False
        self._again = False
        self._flush_scheduled = False
        self._written_marks = (-1, -1, -1, -1)  # (delivered, ack floor) as last written
        self._confirms: list[str] = []  # acks as requests waiting for the state's fsync
        self._confirming = False
        self._inactive_timer: TimerHandle | None = None
        self._pause_timer: TimerHandle | None = None
        self._wake_timer: TimerHandle | None = None
        self._cont_timer: TimerHandle | None = None
        self._last_active_ns = self.clock.now_ns()
        self.delivered_last_ns = 0
        self._replay_original = config.replay_policy == "original"
        self._replay_prev: tuple[int, int] | None = None  # (msg ts, sent at) for replay original
        self.cursor = Cursor(stream, config.filters)
        self.acks = AckTracker(
            self.clock, stream, self.cursor, config, on_change=self._dirty, on_due=self.kick
        )
        self.acks.on_max_deliveries = self._max_deliveries
        if state is not None:
            self.cursor.restore(state.delivered_consumer_seq, state.delivered_stream_seq)
            self.acks.restore(
                state.ack_floor_consumer_seq, state.ack_floor_stream_seq,
                state.pending, state.redelivered, state.dropped,
            )
        else:
            self.cursor.start(config)
            self.acks.start(self.cursor.sseq - 1)
        self.delivery: Delivery = (
            PullDelivery(self, host, config) if config.is_pull else PushDelivery(self, host, config)
        )
        self._arm_inactive()
        self._arm_pause()

    # -- configuration -------------------------------------------------------
    def update_config(self, config: ConsumerConfig) -> None:
        """Apply an update nats-server allows (checked by the caller)."""
        pause_changed = config.pause_until_ns != self.config.pause_until_ns
        self.config = config
        self._replay_original = config.replay_policy == "original"
        self.cursor.set_filters(config.filters)
        self.acks.configure(config)
        self.delivery.reconfigure(config)
        self._arm_inactive()
        self._arm_pause()
        if pause_changed:
            self._pause_advisory()
        self._write_meta()
        self._dirty()
        self.kick()

    # -- StreamListener --------------------------------------------------------
    def on_stored(self, msg: StoredMessage) -> None:
        # hot path: the cursor's fields are read here, not through calls
        cursor = self.cursor
        if self.stream.config is not cursor.stream_config:
            cursor.refresh_filters()
        if self._closed or (cursor.match is not None and not cursor.match(msg.subject)):
            return
        if msg.seq >= cursor.sseq:
            cursor.npc += 1
        self.kick(msg)

    def on_purged(self, first_seq: int, removed: Sequence[int] | None = ()) -> None:
        self.cursor.on_purged(first_seq)
        self.acks.on_purged(first_seq, removed)
        self._dirty()
        self.kick()

    def wants(self, seq: int, subject: str) -> bool:
        cursor = self.cursor
        if cursor.match is not None and not cursor.match(subject):
            return False
        acks = self.acks
        return seq >= cursor.sseq or seq in acks.pending or seq in acks.dropped

    def on_stream_deleted(self) -> None:
        self._shutdown(notify=True)

    def shutting_down(self) -> None:
        """The server is going away: waiting pull requests hear of it now."""
        if isinstance(self.delivery, PullDelivery) and not self._closed:
            self.delivery.shutting_down()

    def stop(self) -> None:
        if self._closed:
            return
        self.flush()
        self._shutdown(notify=False)

    # -- lifecycle -------------------------------------------------------------
    def _shutdown(self, *, notify: bool) -> None:
        self._closed = True
        for timer in (self._inactive_timer, self._pause_timer, self._wake_timer, self._cont_timer):
            if timer is not None:
                timer.cancel()
        self._inactive_timer = self._pause_timer = self._wake_timer = self._cont_timer = None
        self.acks.close()
        self.delivery.close(notify=notify)
        if self.store is not None:
            self.store.close()

    def delete(self) -> None:
        """Remove the consumer: stop it, drop its files, leave the stream."""
        if self._closed:
            return
        self._shutdown(notify=True)
        if self.store is not None:
            self.store.destroy()
        acks = self.acks
        lowest = self.cursor.sseq
        if acks.pending:
            lowest = min(lowest, next(iter(acks.pending)))  # ascending insertion order
        if acks.dropped:
            lowest = min(lowest, min(acks.dropped))
        # what it no longer holds on an interest stream: only from `lowest`, its subjects
        self.stream.remove_consumer(self.name, max(lowest, 1), self.cursor.store_filters)
        advisories.consumer_action(self.host, self.clock.now_ns(), self.stream_name, self.name,
                                   "delete", self.host.domain or None)

    @property
    def closed(self) -> bool:
        return self._closed

    # -- persistence -----------------------------------------------------------
    def _write_meta(self) -> None:
        if self.store is not None:
            self.store.write_meta(self.config.to_json(), self.created_ns)

    def _dirty(self) -> None:
        if self.store is None or self._flush_scheduled or self._closed:
            return
        self._flush_scheduled = True
        self.clock.call_later(0, self._flush_later)

    def _flush_later(self) -> None:
        self.flush()

    def snapshot(self) -> ConsumerState:
        cursor, acks = self.cursor, self.acks
        return ConsumerState(
            delivered_consumer_seq=cursor.dseq,
            delivered_stream_seq=cursor.last_sseq,
            ack_floor_consumer_seq=acks.adflr,
            ack_floor_stream_seq=acks.asflr,
            pending=[(s, p.consumer_seq, p.timestamp_ns) for s, p in acks.pending.items()],
            redelivered=list(acks.rdc.items()),
            dropped=sorted(acks.dropped),
        )

    def flush(self) -> bool:
        """Write the delivery state now (scheduled after changes, at most once per
        turn); True when everything is stored (or there is nothing to store)."""
        self._flush_scheduled = False
        if self.store is None or self._closed:
            return True
        try:
            self.write_state()
        except OSError as exc:
            logger.error(
                "writing state of consumer %s > %s failed: %s", self.stream_name, self.name, exc
            )
            return False
        return True

    def confirm(self, reply: str) -> None:
        """Answer an ack sent as a request once it is stored: written now, and with
        sync_always fsynced on the disk thread together with the other acks of
        this loop turn (the loop does not wait). Nothing is answered when the
        write or the fsync fails."""
        if not self.flush():
            return
        store = self.store
        if store is None or not store.unsynced:
            if not self._confirms:
                self.host.publish(reply, None, None, b"")
                return
        self._confirms.append(reply)
        if not self._confirming:
            self._confirming = True
            self.clock.call_later(0, self._commit_confirms)

    def _commit_confirms(self) -> None:
        store = self.store
        replies, self._confirms = self._confirms, []
        try:
            job = store.begin_sync() if store is not None and not self._closed else None
        except OSError as exc:
            self._confirmed(replies, exc)
            return
        if job is None:
            self._confirmed(replies, None)
            return
        self.clock.run_off_loop(job, lambda result: self._confirmed(replies, result))

    def _confirmed(self, replies: list[str], result: object) -> None:
        self._confirming = False
        if isinstance(result, BaseException):
            logger.error(
                "fsync of consumer %s > %s state failed: %s", self.stream_name, self.name, result
            )
            if self.store is not None:
                self.store.sync_failed()
        else:
            for reply in replies:
                self.host.publish(reply, None, None, b"")
        if self._confirms and not self._confirming:
            self._confirming = True
            self.clock.call_later(0, self._commit_confirms)

    def write_state(self) -> None:
        """Store what changed since the last write: a log line of the changes
        (consumer/store.py), or the whole state after bulk changes and when the
        log is due for compaction. Raises OSError; nothing is lost then, the
        next write is a whole state."""
        store, acks, cursor = self.store, self.acks, self.cursor
        assert store is not None
        marks = (cursor.dseq, cursor.last_sseq, acks.adflr, acks.asflr)
        if acks.rewrite_all or store.wants_full:
            acks.rewrite_all = True
            store.write_state(self.snapshot())
            acks.rewrite_all = False
            acks.touched.clear()
            self._written_marks = marks
            return
        touched = acks.touched
        if not touched and marks == self._written_marks:
            return
        pending, rdc, dropped = acks.pending, acks.rdc, acks.dropped
        delta: dict[str, Any] = {"d": [marks[0], marks[1]], "f": [marks[2], marks[3]]}
        if touched:
            added, gone, counts, uncounted, dropped_now = [], [], [], [], []
            for seq in touched:
                entry = pending.get(seq)
                if entry is None:
                    gone.append(seq)
                else:
                    added.append([seq, entry.consumer_seq, entry.timestamp_ns])
                count = rdc.get(seq)
                if count is None:
                    uncounted.append(seq)
                else:
                    counts.append([seq, count])
                if seq in dropped:
                    dropped_now.append(seq)
            delta.update(p=added, u=gone, r=counts, ru=uncounted, x=dropped_now)
        try:
            store.append_delta(delta)
        except OSError:
            acks.rewrite_all = True  # what this line held goes with the next whole state
            raise
        acks.touched = set()
        self._written_marks = marks

    # -- activity, pause -------------------------------------------------------
    def touch(self) -> None:
        self._last_active_ns = self.clock.now_ns()

    def _arm_inactive(self) -> None:
        if self._inactive_timer is not None:
            self._inactive_timer.cancel()
            self._inactive_timer = None
        threshold = self.config.inactive_threshold_ns
        if threshold <= 0 or self._closed:
            return
        self._inactive_timer = self.clock.call_later(threshold / NS, self._check_inactive)

    def _check_inactive(self) -> None:
        self._inactive_timer = None
        if self._closed:
            return
        threshold = self.config.inactive_threshold_ns
        now = self.clock.now_ns()
        if self.delivery.active():
            self._last_active_ns = now
        idle = now - max(self._last_active_ns, self.acks.last_active_ns)
        if idle >= threshold:
            logger.debug("consumer %s > %s inactive for %d ns: deleted", self.stream_name, self.name, idle)
            self.delete()
            return
        self._inactive_timer = self.clock.call_later((threshold - idle) / NS, self._check_inactive)

    @property
    def paused(self) -> bool:
        return self.config.pause_until_ns > self.clock.now_ns()

    @property
    def num_ack_pending(self) -> int:
        return len(self.acks.pending)

    @property
    def num_to_deliver(self) -> int:
        return max(self.cursor.npc, 0) + len(self.acks.rdq)

    def unpin(self, group: str = "") -> None:
        """`$JS.API.CONSUMER.UNPIN` (the caller checked the group)."""
        if isinstance(self.delivery, PullDelivery):  # only pull consumers pin
            self.delivery.unpin(group)

    def _arm_pause(self) -> None:
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None
        if self.paused:
            delay = (self.config.pause_until_ns - self.clock.now_ns()) / NS
            self._pause_timer = self.clock.call_later(delay, self._resume)

    def _resume(self) -> None:
        self._pause_timer = None
        self._pause_advisory()
        self.kick()

    def pause(self, until_ns: int) -> None:
        changed = until_ns != self.config.pause_until_ns
        self.config = replace(self.config, pause_until_ns=until_ns)
        self._arm_pause()
        if changed:
            self._pause_advisory()
        self._write_meta()
        self.kick()

    def _pause_advisory(self) -> None:
        advisories.consumer_pause(self.host, self.clock.now_ns(), self.stream_name, self.name,
                                  self.paused, self.config.pause_until_ns,
                                  self.host.domain or None)

    # -- the delivery loop -----------------------------------------------------
    def kick(self, hint: StoredMessage | None = None) -> None:
        """Deliver whatever can be delivered now: run the delivery, with a budget of
        RUN_BUDGET messages for this loop turn (the rest goes out on the next turn,
        so one large pull or a push backlog never holds the event loop, and the
        clients' socket buffers, for long)."""
        if self._closed:
            return
        if self.stream.config is not self.cursor.stream_config:
            self.cursor.refresh_filters()
        if self._in_deliver:
            self._again = True
            return
        self._in_deliver = True
        budget = RUN_BUDGET
        run = self.delivery.run
        try:
            self._again = True
            while self._again and not self._closed:
                self._again = False
                budget = run(hint, budget)
                hint = None
        finally:
            self._in_deliver = False

    def continue_later(self) -> None:
        if self._cont_timer is None and not self._closed:
            self._cont_timer = self.clock.call_later(0, self._continue)

    def _continue(self) -> None:
        self._cont_timer = None
        self.kick()

    def has_more(self) -> bool:
        return self.cursor.npc > 0 or bool(self.acks.rdq) or bool(self.cursor.lps)

    def next_message(
        self, hint: StoredMessage | None = None
    ) -> tuple[StoredMessage, int] | None:
        """The next message to deliver and its delivery count, without committing it.

        Redeliveries first, then (unless `max_ack_pending` is reached) the next
        new message. Call `commit` after sending, or `unget` to give it back."""
        acks = self.acks
        if acks.rdq:
            found = acks.next_redelivery()
            if found is not None:
                return found
        if acks.max_ack_pending and len(acks.pending) >= acks.max_ack_pending:
            return None
        msg = self.cursor.next_new(hint)
        if msg is None:
            return None
        if self._replay_original and not self._replay_due(msg):
            return None
        return msg, 1

    def next_run(self, limit: int, max_bytes: int = 0) -> MessageRun | None:
        """New messages as a run (see `delivery.Source.next_run`): one store read
        from the cursor, with its filters; None while redeliveries are due,
        `last_per_subject` has subjects left or replay `original` paces."""
        acks = self.acks
        cursor = self.cursor
        if acks.rdq or cursor.lps or self._replay_original:
            return None
        if acks.max_ack_pending:
            limit = min(limit, acks.max_ack_pending - len(acks.pending))
        if limit <= 0:
            return _empty_run(cursor.sseq)
        run = self.stream.store.read_run(
            cursor.sseq, limit, max_bytes=max_bytes, filters=cursor.store_filters
        )
        if not run and not run.blocked_size:
            # nothing more matches: as `Cursor.next_new` finding nothing
            cursor.npc = 0
            if cursor.store_filters is not None and run.next_seq > cursor.sseq:
                cursor.sseq = run.next_seq
        return run

    def run_frames(self, run: MessageRun) -> DeliveryRun:
        cursor = self.cursor
        return DeliveryRun(
            run, self._ack_prefix, cursor.dseq + 1, cursor.npc, self.stream.store.overhead
        )

    def commit_run(self, frames: DeliveryRun) -> None:
        """Record the first deliveries of a run: as `commit` of each message in turn."""
        seqs = frames.run.seqs
        if not seqs:
            return
        now = self.clock.now_ns()
        cursor = self.cursor
        first_dseq = cursor.dseq + 1
        cursor.commit_run(seqs[-1], len(seqs))
        self.delivered_last_ns = now
        self._last_active_ns = now
        self.acks.track_run(seqs, first_dseq, now)
        if self.store is not None and not self._flush_scheduled:
            self._dirty()

    def _replay_due(self, msg: StoredMessage) -> bool:
        prev = self._replay_prev
        if prev is None:
            return True
        prev_ts, sent_ns = prev
        due = sent_ns + max(msg.timestamp_ns - prev_ts, 0)
        now = self.clock.now_ns()
        if due <= now:
            return True
        if self._wake_timer is None:
            self._wake_timer = self.clock.call_later((due - now) / NS, self._wake)
        return False

    def _wake(self) -> None:
        self._wake_timer = None
        self.kick()

    def unget(self, msg: StoredMessage, dc: int) -> None:
        """Give back a message `next_message` returned (it was not sent)."""
        self.acks.unget(msg.seq, dc)

    def ack_reply(self, msg: StoredMessage, dc: int) -> str:
        cursor = self.cursor
        return f"{self._ack_prefix}{dc}.{msg.seq}.{cursor.dseq + 1}.{msg.timestamp_ns}.{cursor.npc}"

    def commit(self, msg: StoredMessage, dc: int) -> str:
        """Record the delivery of `msg`; returns the ack reply subject to send it with."""
        seq = msg.seq
        now = self.clock.now_ns()
        cursor = self.cursor
        dseq = cursor.commit(seq, dc)
        if self._replay_original:
            self._replay_prev = (msg.timestamp_ns, now)
        self.delivered_last_ns = now
        self._last_active_ns = now
        self.acks.track(seq, dseq, dc, now)
        if self.store is not None and not self._flush_scheduled:
            self._dirty()
        return f"{self._ack_prefix}{dc}.{seq}.{dseq}.{msg.timestamp_ns}.{cursor.npc}"

    # -- requests and acks -----------------------------------------------------
    def process_pull(self, reply: str | None, payload: bytes) -> None:
        """A `CONSUMER.MSG.NEXT` request (or `+NXT`)."""
        if self._closed or not reply:
            return
        self.delivery.request(reply, payload)

    def ack(self, seq: int, dseq: int = 0) -> bool:
        """+ACK (or empty) for stream sequence `seq` (`dseq`: the consumer sequence
        of the delivery acked, from the ack subject); False if it was not pending."""
        if not self.acks.ack(seq, dseq):
            return False
        if self.delivery.ready():
            self.kick()  # a freed max_ack_pending slot may let something out
        return True

    def nak(self, seq: int, delay_ns: int = 0, dseq: int = 0, dc: int = 0) -> None:
        """-NAK (`dseq`, `dc`: the delivery's consumer sequence and count, for the
        advisory nats-server sends while the message is pending)."""
        if dseq and seq in self.acks.pending and not self.acks.ack_none:
            advisories.nak(self.host, self.clock.now_ns(), self.stream_name, self.name,
                           dseq, seq, dc)
        if self.acks.nak(seq, delay_ns):
            self.kick()

    def progress(self, seq: int) -> None:
        self.acks.progress(seq)

    def term(self, seq: int, dseq: int = 0, dc: int = 0, reason: str = "") -> None:
        """+TERM; nats-server sends its advisory whether or not the message was pending."""
        done = self.acks.term(seq, dseq)
        if dc:
            advisories.terminated(self.host, self.clock.now_ns(), self.stream_name, self.name,
                                  dseq, seq, dc, reason)
        if done and self.delivery.ready():
            self.kick()

    def _max_deliveries(self, seq: int, deliveries: int) -> None:
        advisories.max_deliveries(self.host, self.clock.now_ns(), self.stream_name, self.name,
                                  seq, deliveries)

    # -- reset -------------------------------------------------------------------
    def reset(self, seq: int) -> int:
        """CONSUMER.RESET (ADR-60); returns `reset_seq` or raises ApiError 10204."""
        if seq > 0:
            if self.config.deliver_policy not in ("all", "by_start_sequence", "by_start_time"):
                raise ApiError(Err.CONSUMER_INVALID_RESET, err="not allowed")
            if (
                self.config.deliver_policy != "all"
                and seq < self.cursor.start_seq_for_policy(self.config)
            ):
                raise ApiError(Err.CONSUMER_INVALID_RESET, err="below start seq")
            reset_seq = seq
        else:
            reset_seq = self.acks.asflr + 1
        self.acks.reset(reset_seq - 1)
        self.cursor.reset(reset_seq)
        self._replay_prev = None
        # Interest retention (nats-server 2.15): moving the floor up acknowledges
        # what it passes; work queues keep their messages (nothing was acked).
        # (nats-server 2.15.1 acknowledges nothing when the reset goes past the
        # stream's end.)
        if self.stream.config.retention == "interest":
            store = self.stream.store
            state = store.state()
            if reset_seq - 1 <= int(state.last_seq):
                passed = [
                    m.seq
                    for m in store.iter_range(
                        int(state.first_seq), reset_seq - 1, self.cursor.store_filters
                    )
                ]
                for passed_seq in passed:
                    self.stream.acknowledged(passed_seq)
        self._dirty()
        self.kick()
        return reset_seq

    # -- info --------------------------------------------------------------------
    def recount(self) -> None:
        self.cursor.recount()

    def info(self) -> dict[str, Any]:
        cursor, acks = self.cursor, self.acks
        cursor.recount()
        now = self.clock.now_ns()
        delivered: dict[str, Any] = {"consumer_seq": cursor.dseq, "stream_seq": cursor.last_sseq}
        if self.delivered_last_ns:
            delivered["last_active"] = format_time(self.delivered_last_ns)
        # The internal floor may include non-matching messages skipped past the
        # last delivery; nats-server reports it no higher than what was delivered.
        floor: dict[str, Any] = {
            "consumer_seq": acks.adflr,
            "stream_seq": min(acks.asflr, max(cursor.last_sseq, 0)),
        }
        if acks.last_ack_ns:
            floor["last_active"] = format_time(acks.last_ack_ns)
        out: dict[str, Any] = {
            "stream_name": self.stream_name,
            "name": self.name,
            "created": format_time(self.created_ns),
            "config": self.config.to_json(),
            "delivered": delivered,
            "ack_floor": floor,
            "num_ack_pending": len(acks.pending),
            "num_redelivered": len(acks.rdc),
            "num_waiting": self.delivery.num_waiting,
            "num_pending": cursor.npc,
        }
        bound = self.delivery.bound()
        if bound is not None:
            out["push_bound"] = bound
        if self.paused:
            out["paused"] = True
            out["pause_remaining"] = self.config.pause_until_ns - now
        out["ts"] = format_time(now)
        if self.config.priority_groups:
            out["priority_groups"] = group_states(
                self.config, self.delivery.pin if isinstance(self.delivery, PullDelivery) else None
            )
        return out


def _empty_run(next_seq: int) -> MessageRun:
    return ListRun([], [], next_seq)
