"""The consumer: a cursor over a stream with delivery and acknowledgement state.

One `Consumer` per (stream, name). It is a `StreamListener` (server/jetstream/
seams.py): the stream tells it about new and purged messages. It delivers
through the engine (`engine.publish`) to waiting pull requests (pull.py) or to
a push `deliver_subject` (push.py adds flow control and heartbeats), and
processes acks (acks.py parses them).

State, named as in nats-server:
- `sseq`: the next stream sequence to deliver for the first time;
  `dseq`: the last consumer (delivery) sequence used. `delivered` in info is
  `(dseq, sseq - 1)`.
- `ack floor` `(adflr, asflr)`: everything at or below is acknowledged.
- `pending`: stream_seq -> `Pending` for delivered, unacknowledged messages
  (ack explicit / all), keeping the first delivery's consumer sequence.
  Insertion order is ascending stream sequence (first deliveries happen in
  order; redeliveries update entries in place).
- `rdc`: stream_seq -> delivery count, only for messages delivered twice or
  more (`num_redelivered` = its size); `rdq`: sequences due for redelivery.
- `dropped`: sequences that reached `max_deliver`; they leave `pending` but
  hold the ack floor, as in nats-server.
- `npc`: `num_pending`, the matching messages at or after `sseq`, kept
  incrementally (+1 on a stored match, -1 per first delivery, recomputed on
  purge/reset, set to 0 when the store has nothing more) so the ack subject's
  last token is exact without a store scan per message.

Time comes only from `engine.clock`. Everything runs on the loop thread;
delivery is re-entrancy safe (`_deliver` loops while asked again).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.headers import status_headers
from jetstream_server.jetstream.consumer_config import ConsumerConfig, format_time
from jetstream_server.jetstream.consumer_store import ConsumerState, ConsumerStore
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.pull import (
    CONSUMER_DELETED,
    EXCEEDED_MAX_WAITING,
    NO_MESSAGES,
    PullRequestError,
    WaitingQueue,
    WaitingRequest,
    parse_pull_request,
    request_timeout,
)
from jetstream_server.jetstream.push import PushDelivery
from jetstream_server.jetstream.subject_match import is_subset
from jetstream_server.store.base import StoredMessage

if TYPE_CHECKING:
    from jetstream_server.core.router import MessageHandler

logger = logging.getLogger(__name__)

NS = 1_000_000_000
RUN_BUDGET = 2048  # deliveries per event-loop turn and consumer


class ConsumerHost(Protocol):
    """What a consumer needs from the engine."""

    clock: Clock

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


class EngineHost:
    """`ConsumerHost` over the JetStream engine and its router.

    Delivery needs the router to route by one subject (the inbox or deliver
    subject) while presenting another (the message's stream subject): the
    broker offers `publish_as(target, subject, reply, headers, payload)`.
    A router without it gets the message under the target subject (logged once).
    """

    _warned = False

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.clock: Clock = engine.clock

    def publish(
        self, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        self.engine.router.publish(subject, reply, headers, payload)

    def deliver(
        self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        router = self.engine.router
        publish_as = getattr(router, "publish_as", None)
        if publish_as is not None:
            publish_as(target, subject, reply, headers, payload)
            return
        if not EngineHost._warned:
            EngineHost._warned = True
            logger.warning("router has no publish_as: deliveries carry the inbox subject")
        router.publish(target, reply, headers, payload)

    def has_interest(self, subject: str) -> bool:
        return bool(self.engine.router.has_interest(subject))

    def subscribe(self, subject: str, handler: MessageHandler) -> int:
        return int(self.engine.router.subscribe(subject, handler))

    def unsubscribe(self, sid: int) -> None:
        self.engine.router.unsubscribe(sid)


class StreamLike(Protocol):
    name: str
    config: Any
    store: Any
    directory: Any
    consumers: dict[str, Any]

    def acknowledged(self, seq: int) -> None: ...

    def remove_consumer(self, name: str) -> None: ...


@dataclass(slots=True)
class Pending:
    consumer_seq: int
    timestamp_ns: int  # last delivery
    due_ns: int  # when it is redelivered unless acked


def make_matcher(filters: tuple[str, ...]) -> Callable[[str], bool] | None:
    """A subject predicate for `filters`, or None when everything matches."""
    if not filters or ">" in filters:
        return None
    literals = frozenset(f for f in filters if "*" not in f and ">" not in f)
    patterns = [tuple(f.split(".")) for f in filters if f not in literals]
    if not patterns:
        return literals.__contains__

    def match(subject: str) -> bool:
        if subject in literals:
            return True
        toks = subject.split(".")
        for pat in patterns:
            n = len(pat)
            if pat[-1] == ">":
                if len(toks) < n:
                    continue
                n -= 1
            elif len(toks) != n:
                continue
            if all(p == "*" or p == t for p, t in zip(pat[:n], toks, strict=False)):
                return True
        return False

    return match


def headers_only_block(headers: bytes | None, size: int) -> bytes:
    line = b"Nats-Msg-Size: %d\r\n" % size
    if not headers:
        return b"NATS/1.0\r\n" + line + b"\r\n"
    if headers.endswith(b"\r\n\r\n"):
        return headers[:-2] + line + b"\r\n"
    return headers + line + b"\r\n"


class Consumer:
    """A durable or ephemeral consumer of one stream."""

    def __init__(
        self,
        engine: ConsumerHost,
        stream: StreamLike,
        config: ConsumerConfig,
        *,
        name: str,
        created_ns: int | None = None,
        state: ConsumerState | None = None,
        store: ConsumerStore | None = None,
    ) -> None:
        self.engine = engine
        self.clock = engine.clock
        self.stream = stream
        self.name = name
        self.config = config
        self.created_ns = created_ns if created_ns is not None else self.clock.now_ns()
        self.store = store
        self._ack_prefix = f"$JS.ACK.{stream.name}.{name}."
        self._closed = False
        self._in_deliver = False
        self._again = False
        self._ptmr: TimerHandle | None = None
        self._ptmr_due = 0
        self._flush_scheduled = False
        self._inactive_timer: TimerHandle | None = None
        self._pause_timer: TimerHandle | None = None
        self._wake_timer: TimerHandle | None = None
        self._cont_timer: TimerHandle | None = None
        self._budget = RUN_BUDGET
        self._last_active_ns = self.clock.now_ns()
        self.delivered_last_ns = 0
        self.ack_last_ns = 0
        self.on_delete: Callable[[Consumer], None] | None = None
        # delivery state
        self.sseq = 1
        self.last_sseq = 0  # stream seq of the last first delivery (info's delivered)
        self.dseq = 0
        self.adflr = 0
        self.asflr = 0
        self.pending: dict[int, Pending] = {}
        self.rdc: dict[int, int] = {}
        self.rdq: deque[int] = deque()
        self._rdq_set: set[int] = set()
        self.dropped: set[int] = set()
        self.lps: deque[int] = deque()
        self.npc = 0
        self._replay_prev: tuple[int, int] | None = None  # (msg ts, sent at) for replay original
        self._apply_config(config)
        self.waiting = WaitingQueue(config.max_waiting)
        self.push: PushDelivery | None = None
        if state is not None:
            self._restore(state)
        else:
            self._select_start()
        if not config.is_pull:
            self.push = PushDelivery(self)
        self._arm_inactive()
        self._arm_pause()

    # -- configuration -------------------------------------------------------
    def _apply_config(self, config: ConsumerConfig) -> None:
        self.config = config
        self.filters = config.filters
        self._ack_none = config.ack_policy == "none"
        self._ack_all = config.ack_policy == "all"
        self._stream_cfg_seen: Any = None
        self._refresh_filters()

    def _refresh_filters(self) -> None:
        """Filters as the store and the matcher use them. A filter set that covers
        every subject of the stream selects everything: the store then walks all
        messages without resolving subjects (ordered consumers and KV watchers
        filter on the stream's own subject). Re-checked when the stream config changes."""
        stream_cfg = self.stream.config
        self._stream_cfg_seen = stream_cfg
        filters = self.filters
        subjects = tuple(getattr(stream_cfg, "subjects", ()) or ())
        if filters and subjects and all(
            any(is_subset(s, f) for f in filters) for s in subjects
        ):
            filters = ()
        self._store_filters: tuple[str, ...] | None = filters or None
        self._match = make_matcher(filters)

    def matches(self, subject: str) -> bool:
        return self._match is None or self._match(subject)

    def update_config(self, config: ConsumerConfig) -> None:
        """Apply an update nats-server allows (checked by the caller)."""
        filters_changed = config.filters != self.filters
        self._apply_config(config)
        self.waiting.max_waiting = config.max_waiting
        if filters_changed:
            self.npc = self._count_pending(self.sseq)
        if self.push is not None:
            self.push.reconfigure()
        self._arm_inactive()
        self._arm_pause()
        self._write_meta()
        self._dirty()
        self.kick()

    # -- starting position -----------------------------------------------------
    def _store_state(self) -> Any:
        return self.stream.store.state()

    def _count_pending(self, start_seq: int) -> int:
        return int(self.stream.store.num_pending(start_seq, self._store_filters))

    def _select_start(self) -> None:
        cfg = self.config
        state = self._store_state()
        first, last = state.first_seq, state.last_seq
        policy = cfg.deliver_policy
        self.lps.clear()
        if policy == "all":
            self.sseq = max(first, 1)
        elif policy == "new":
            self.sseq = last + 1
        elif policy == "last":
            seqs = [
                m.seq
                for f in (self.filters or (None,))
                if (m := self.stream.store.load_last(f)) is not None
            ]
            self.sseq = max(seqs) if seqs else last + 1
        elif policy == "by_start_sequence":
            self.sseq = max(cfg.opt_start_seq, 1)
            if self.sseq < first:
                self.sseq = first
        elif policy == "by_start_time":
            self.sseq = max(int(self.stream.store.seq_for_time(cfg.opt_start_time_ns or 0)), 1)
        elif policy == "last_per_subject":
            lasts: set[int] = set()
            for f in self.filters or (">",):
                for info in self.stream.store.subjects(f).values():
                    lasts.add(info.last_seq)
            if lasts:
                self.lps.extend(sorted(lasts))
                self.sseq = self.lps[0]
            else:
                self.sseq = last + 1
        self.asflr = self.sseq - 1
        self.last_sseq = self.sseq - 1
        self.adflr = 0
        self.dseq = 0
        self.npc = len(self.lps) if self.lps else self._count_pending(self.sseq)

    def start_seq_for_policy(self) -> int:
        """The first stream sequence the deliver policy selects now (for RESET checks)."""
        cfg = self.config
        if cfg.deliver_policy == "by_start_sequence":
            return max(cfg.opt_start_seq, 1)
        if cfg.deliver_policy == "by_start_time":
            return max(int(self.stream.store.seq_for_time(cfg.opt_start_time_ns or 0)), 1)
        return 1

    def _restore(self, state: ConsumerState) -> None:
        self.dseq = state.delivered_consumer_seq
        self.sseq = state.delivered_stream_seq + 1
        self.last_sseq = state.delivered_stream_seq
        self.adflr = state.ack_floor_consumer_seq
        self.asflr = state.ack_floor_stream_seq
        now = self.clock.now_ns()
        for seq, dseq, ts in sorted(state.pending):
            self.pending[seq] = Pending(dseq, ts, max(ts + self._ack_wait_ns(1), now))
        self.rdc = {seq: count for seq, count in state.redelivered}
        for seq, count in self.rdc.items():
            if seq in self.pending:
                self.pending[seq].due_ns = max(
                    self.pending[seq].timestamp_ns + self._ack_wait_ns(count), now
                )
        self.dropped = set(state.dropped)
        first = self._store_state().first_seq
        if self.sseq < first:
            self.sseq = first
        self.npc = self._count_pending(self.sseq)
        if self.pending:
            self._arm_pending_timer(min(p.due_ns for p in self.pending.values()))

    # -- StreamListener --------------------------------------------------------
    def on_stored(self, msg: StoredMessage) -> None:
        if self.stream.config is not self._stream_cfg_seen:
            self._refresh_filters()
        if self._closed or (self._match is not None and not self._match(msg.subject)):
            return
        if msg.seq >= self.sseq:
            self.npc += 1
        self.kick(msg)

    def on_purged(self, first_seq: int) -> None:
        store = self.stream.store
        for seq in [s for s in self.pending if s < first_seq or store.load(s) is None]:
            del self.pending[seq]
            self.rdc.pop(seq, None)
        self.dropped = {s for s in self.dropped if s >= first_seq}
        self.rdc = {s: c for s, c in self.rdc.items() if s >= first_seq}
        if self.sseq < first_seq:
            self.sseq = first_seq
        if self.last_sseq < first_seq - 1:
            self.last_sseq = first_seq - 1
        if self.asflr < first_seq - 1:
            self.asflr = first_seq - 1
        while self.lps and self.lps[0] < first_seq:
            self.lps.popleft()
        self._update_floor_after_removal()
        self.npc = len(self.lps) if self.lps else self._count_pending(self.sseq)
        self._dirty()
        self.kick()

    def wants(self, seq: int, subject: str) -> bool:
        if self._match is not None and not self._match(subject):
            return False
        return seq >= self.sseq or seq in self.pending or seq in self.dropped

    def on_stream_deleted(self) -> None:
        self._shutdown(notify=True)

    def stop(self) -> None:
        if self._closed:
            return
        self.flush()
        self._shutdown(notify=False)

    # -- lifecycle -------------------------------------------------------------
    def _shutdown(self, *, notify: bool) -> None:
        self._closed = True
        for timer in (
            self._ptmr, self._inactive_timer, self._pause_timer, self._wake_timer, self._cont_timer
        ):
            if timer is not None:
                timer.cancel()
        self._ptmr = self._inactive_timer = self._pause_timer = self._wake_timer = None
        self._cont_timer = None
        for waiting in self.waiting.clear():
            if notify:
                self.engine.publish(waiting.reply, None, CONSUMER_DELETED, b"")
        if self.push is not None:
            self.push.close()

    def delete(self) -> None:
        """Remove the consumer: stop it, drop its files, leave the stream."""
        if self._closed:
            return
        self._shutdown(notify=True)
        if self.store is not None:
            self.store.destroy()
        self.stream.remove_consumer(self.name)
        if self.on_delete is not None:
            self.on_delete(self)

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
        self.clock.call_later(0, self.flush)

    def snapshot(self) -> ConsumerState:
        return ConsumerState(
            delivered_consumer_seq=self.dseq,
            delivered_stream_seq=self.last_sseq,
            ack_floor_consumer_seq=self.adflr,
            ack_floor_stream_seq=self.asflr,
            pending=[(s, p.consumer_seq, p.timestamp_ns) for s, p in self.pending.items()],
            redelivered=list(self.rdc.items()),
            dropped=sorted(self.dropped),
        )

    def flush(self) -> None:
        """Write the delivery state now (scheduled after changes, at most once per turn)."""
        self._flush_scheduled = False
        if self.store is None or self._closed:
            return
        try:
            self.store.write_state(self.snapshot())
        except OSError:
            logger.exception("writing state of consumer %s > %s failed", self.stream.name, self.name)

    # -- activity, pause -------------------------------------------------------
    def _touch(self) -> None:
        self._last_active_ns = self.clock.now_ns()

    def _is_active(self) -> bool:
        if self.push is not None:
            return self.push.has_interest()
        return len(self.waiting) > 0

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
        if self._is_active():
            self._last_active_ns = now
        idle = now - self._last_active_ns
        if idle >= threshold:
            logger.debug("consumer %s > %s inactive for %d ns: deleted", self.stream.name, self.name, idle)
            self.delete()
            return
        self._inactive_timer = self.clock.call_later((threshold - idle) / NS, self._check_inactive)

    @property
    def paused(self) -> bool:
        return self.config.pause_until_ns > self.clock.now_ns()

    def _arm_pause(self) -> None:
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None
        if self.paused:
            delay = (self.config.pause_until_ns - self.clock.now_ns()) / NS
            self._pause_timer = self.clock.call_later(delay, self._resume)

    def _resume(self) -> None:
        self._pause_timer = None
        self.kick()

    def pause(self, until_ns: int) -> None:
        from dataclasses import replace

        self.config = replace(self.config, pause_until_ns=until_ns)
        self._arm_pause()
        self._write_meta()
        self.kick()

    # -- delivery --------------------------------------------------------------
    def _ack_wait_ns(self, delivery_count: int) -> int:
        backoff = self.config.backoff_ns
        if backoff:
            return backoff[min(max(delivery_count, 1), len(backoff)) - 1]
        return self.config.ack_wait_ns or 30 * NS

    def kick(self, hint: StoredMessage | None = None) -> None:
        """Deliver whatever can be delivered now."""
        if self._closed:
            return
        if self.stream.config is not self._stream_cfg_seen:
            self._refresh_filters()
        if self._in_deliver:
            self._again = True
            return
        self._in_deliver = True
        self._budget = RUN_BUDGET
        try:
            self._again = True
            while self._again and not self._closed:
                self._again = False
                if self.push is not None:
                    self.push.run(hint)
                else:
                    self._run_pull(hint)
                hint = None
        finally:
            self._in_deliver = False

    def spend(self) -> bool:
        """Take one delivery from this loop turn's budget. When it is used up the
        rest goes out on the next turn, so one large pull or a push backlog never
        holds the event loop (and the clients' socket buffers) for long."""
        if self._budget > 0:
            self._budget -= 1
            return True
        if self._cont_timer is None and not self._closed:
            self._cont_timer = self.clock.call_later(0, self._continue)
        return False

    def _continue(self) -> None:
        self._cont_timer = None
        self.kick()

    def next_message(
        self, hint: StoredMessage | None = None
    ) -> tuple[StoredMessage, int] | None:
        """The next message to deliver and its delivery count, without committing it.

        Redeliveries first, then (unless `max_ack_pending` is reached) the next
        new message. Call `commit` after sending, or `unget` to give it back."""
        while self.rdq:
            seq = self.rdq.popleft()
            self._rdq_set.discard(seq)
            if seq not in self.pending:
                continue
            dc = self.rdc.get(seq, 1) + 1
            max_deliver = self.config.max_deliver
            if max_deliver > 0 and dc > max_deliver:
                del self.pending[seq]
                self.dropped.add(seq)
                self._dirty()
                continue
            msg = self.stream.store.load(seq)
            if msg is None:
                del self.pending[seq]
                self.rdc.pop(seq, None)
                self._update_floor_after_removal()
                continue
            return msg, dc
        if (
            not self._ack_none
            and self.config.max_ack_pending > 0
            and len(self.pending) >= self.config.max_ack_pending
        ):
            return None
        if self.lps:
            while self.lps:
                msg = self.stream.store.load(self.lps[0])
                if msg is not None:
                    return msg, 1
                self.lps.popleft()
                self.npc = max(self.npc - 1, 0)
            self.npc = self._count_pending(self.sseq)
        if hint is not None and hint.seq == self.sseq:
            msg = hint
        else:
            msg = self.stream.store.load_next(self.sseq, self._store_filters)
        if msg is None:
            self.npc = 0
            if self._store_filters is not None:
                # Nothing more matches: move the cursor past the stream's end (as
                # nats-server does); what lies between never matched.
                end = int(self._store_state().last_seq) + 1
                if end > self.sseq:
                    self.sseq = end
            return None
        if self.config.replay_policy == "original" and not self._replay_due(msg):
            return None
        return msg, 1

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
        if dc > 1:
            self.rdq.appendleft(msg.seq)
            self._rdq_set.add(msg.seq)

    def commit(self, msg: StoredMessage, dc: int) -> str:
        """Record the delivery of `msg`; returns the ack reply subject to send it with."""
        seq = msg.seq
        now = self.clock.now_ns()
        self.dseq += 1
        dseq = self.dseq
        if dc == 1:
            if self.lps and self.lps[0] == seq:
                self.lps.popleft()
            if seq >= self.sseq:
                self.sseq = seq + 1
            if seq > self.last_sseq:
                self.last_sseq = seq
            if self.npc > 0:
                self.npc -= 1
        else:
            self.rdc[seq] = dc
        if self.config.replay_policy == "original":
            self._replay_prev = (msg.timestamp_ns, now)
        self.delivered_last_ns = now
        self._last_active_ns = now
        if self._ack_none:
            self.adflr = dseq
            self.asflr = seq
            if self.stream.config.retention != "limits":
                self.stream.acknowledged(seq)
        else:
            due = now + self._ack_wait_ns(dc)
            entry = self.pending.get(seq)
            if entry is None:
                self.pending[seq] = Pending(dseq, now, due)
            else:
                # nats-server keeps the first delivery's consumer sequence (ack floors use it)
                entry.timestamp_ns = now
                entry.due_ns = due
            if self._ptmr is None or self._ptmr_due > due:  # (checked again inside)
                self._arm_pending_timer(due)
        if not self._flush_scheduled:
            self._dirty()
        return f"{self._ack_prefix}{dc}.{seq}.{dseq}.{msg.timestamp_ns}.{self.npc}"

    def frame(self, msg: StoredMessage) -> tuple[bytes | None, bytes]:
        """Headers and payload of a delivery (headers_only honoured)."""
        if self.config.headers_only:
            return headers_only_block(msg.headers, len(msg.data)), b""
        return msg.headers, msg.data

    # -- pull ------------------------------------------------------------------
    def process_pull(self, reply: str | None, payload: bytes) -> None:
        """A `CONSUMER.MSG.NEXT` request (or `+NXT`)."""
        if self._closed or not reply:
            return
        if self.push is not None:
            self.engine.publish(
                reply, None, status_headers(409, "Consumer is push based"), b""
            )
            return
        try:
            request = parse_pull_request(payload)
        except PullRequestError as exc:
            self.engine.publish(reply, None, exc.status, b"")
            return
        cfg = self.config
        if cfg.max_batch and request.batch > cfg.max_batch:
            self.engine.publish(
                reply, None, status_headers(409, f"Exceeded MaxRequestBatch of {cfg.max_batch}"), b""
            )
            return
        if cfg.max_expires_ns and request.expires_ns > cfg.max_expires_ns:
            self.engine.publish(
                reply,
                None,
                status_headers(409, f"Exceeded MaxRequestExpires of {cfg.max_expires_ns / NS:g}s"),
                b"",
            )
            return
        if cfg.max_bytes and request.max_bytes > cfg.max_bytes:
            self.engine.publish(
                reply, None, status_headers(409, f"Exceeded MaxRequestMaxBytes of {cfg.max_bytes}"), b""
            )
            return
        self._touch()
        self.recount()
        if self.waiting.full:
            self.engine.publish(reply, None, EXCEEDED_MAX_WAITING, b"")
            return
        waiting = WaitingRequest(reply=reply, request=request, received_ns=self.clock.now_ns())
        self.waiting.add(waiting)
        if request.expires_ns:
            waiting.expire_timer = self.clock.call_later(
                request.expires_ns / NS, lambda: self._expire(waiting)
            )
        if request.idle_heartbeat_ns:
            waiting.heartbeat_timer = self.clock.call_later(
                request.idle_heartbeat_ns / NS, lambda: self._pull_heartbeat(waiting)
            )
        self.kick()

    def _expire(self, waiting: WaitingRequest) -> None:
        waiting.expire_timer = None
        self.waiting.remove(waiting)
        if not self._closed:
            self.engine.publish(
                waiting.reply, None, request_timeout(waiting.remaining, waiting.pending_bytes()), b""
            )

    def _pull_heartbeat(self, waiting: WaitingRequest) -> None:
        waiting.heartbeat_timer = None
        if self._closed or waiting.remaining <= 0:
            return
        interval = waiting.request.idle_heartbeat_ns
        now = self.clock.now_ns()
        if now - waiting.last_sent_ns >= interval:
            headers = status_headers(
                100,
                "Idle Heartbeat",
                Nats_Last_Consumer=str(self.dseq),
                Nats_Last_Stream=str(self.last_sseq),
            )
            self.engine.publish(waiting.reply, None, headers, b"")
            waiting.last_sent_ns = now
            delay = interval
        else:
            delay = interval - (now - waiting.last_sent_ns)
        waiting.heartbeat_timer = self.clock.call_later(
            delay / NS, lambda: self._pull_heartbeat(waiting)
        )

    def _run_pull(self, hint: StoredMessage | None) -> None:
        if self.paused:
            return
        publish = self.engine.publish
        deliver = self.engine.deliver
        has_interest = self.engine.has_interest
        checked: str | None = None
        while True:
            waiting = self.waiting.peek()
            if waiting is None:
                break
            if checked != waiting.reply:
                if not has_interest(waiting.reply):
                    self.waiting.remove(waiting)
                    continue
                checked = waiting.reply
            if not self.spend():
                return  # continued next turn; no_wait requests are not over yet
            nxt = self.next_message(hint)
            hint = None
            if nxt is None:
                break
            msg, dc = nxt
            headers, payload = self.frame(msg)
            if waiting.request.max_bytes:
                # nats-server counts subject, ack reply, headers and payload
                reply_len = len(
                    f"{self._ack_prefix}{dc}.{msg.seq}.{self.dseq + 1}.{msg.timestamp_ns}.{self.npc}"
                )
                size = len(msg.subject) + reply_len + len(headers or b"") + len(payload)
                if size > waiting.bytes_left:
                    self.unget(msg, dc)
                    self.waiting.remove(waiting)
                    publish(
                        waiting.reply,
                        None,
                        status_headers(
                            409,
                            "Message Size Exceeds MaxBytes",
                            Nats_Pending_Messages=str(waiting.remaining),
                            Nats_Pending_Bytes=str(waiting.bytes_left),
                        ),
                        b"",
                    )
                    continue
                waiting.bytes_left -= size
            reply = self.commit(msg, dc)
            deliver(waiting.reply, msg.subject, reply, headers, payload)
            waiting.remaining -= 1
            waiting.delivered += 1
            waiting.last_sent_ns = self.delivered_last_ns
            if waiting.remaining <= 0:
                self.waiting.remove(waiting)
        # no_wait requests end when the consumer has nothing more for them; held
        # back by max_ack_pending (messages remain) they wait, as on nats-server.
        if self.npc > 0 or self.rdq or self.lps:
            return
        for waiting in self.waiting:
            req = waiting.request
            if req.no_wait and (not req.expires_ns or waiting.delivered > 0):
                self.waiting.remove(waiting)
                publish(waiting.reply, None, NO_MESSAGES, b"")

    # -- acks ------------------------------------------------------------------
    def ack(self, seq: int, dseq: int = 0) -> bool:
        """+ACK (or empty) for stream sequence `seq` (`dseq`: the consumer sequence
        of the delivery acked, from the ack subject); False if it was not pending."""
        now = self.clock.now_ns()
        self.ack_last_ns = now
        self._last_active_ns = now
        if self._ack_none:
            return False
        if self._ack_all:
            return self._ack_up_to(seq, dseq)
        entry = self.pending.pop(seq, None)
        if entry is None:
            return False
        self.rdc.pop(seq, None)
        self._update_floor_after_ack(entry.consumer_seq, seq)
        if self.stream.config.retention != "limits":
            self.stream.acknowledged(seq)
        self._dirty()
        if self.push is not None or len(self.waiting):
            self.kick()  # a freed max_ack_pending slot may let something out
        return True

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
        self.dropped = {s for s in self.dropped if s > seq}
        self.adflr, self.asflr = dseq, max(self.asflr, seq)
        if self.stream.config.retention != "limits":
            for s in acked:
                self.stream.acknowledged(s)
        self._dirty()
        self.kick()
        return True

    def _update_floor_after_ack(self, dseq: int, sseq: int) -> None:
        """nats-server's rule: with nothing pending the floor is what was delivered;
        otherwise it moves only when the ack is for the delivery right above the
        floor, up to just below the next pending message after it."""
        if not self.pending:
            self.adflr = self.dseq
            self.asflr = self.sseq - 1
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

    def _update_floor_after_removal(self) -> None:
        """Pending entries vanished (purge, message gone): with none left the
        floor catches up with what was delivered."""
        if not self.pending and self.sseq - 1 > self.asflr:
            self.adflr = max(self.adflr, self.dseq)
            self.asflr = self.sseq - 1

    def nak(self, seq: int, delay_ns: int = 0) -> None:
        entry = self.pending.get(seq)
        if entry is None or self._ack_none:
            return
        self._touch()
        if delay_ns <= 0 and self.config.backoff_ns:
            delay_ns = self._ack_wait_ns(self.rdc.get(seq, 1))
        if delay_ns > 0:
            entry.due_ns = self.clock.now_ns() + delay_ns
            self._arm_pending_timer(entry.due_ns)
        else:
            self._queue_redelivery(seq)
            self.kick()

    def progress(self, seq: int) -> None:
        entry = self.pending.get(seq)
        if entry is None:
            return
        self._touch()
        now = self.clock.now_ns()
        entry.timestamp_ns = now
        entry.due_ns = now + self._ack_wait_ns(self.rdc.get(seq, 1))
        self._arm_pending_timer(entry.due_ns)

    def term(self, seq: int, dseq: int = 0) -> None:
        if self._ack_none:
            return
        if self._ack_all:
            self._ack_up_to(seq, dseq)
            return
        entry = self.pending.pop(seq, None)
        self._touch()
        if entry is None:
            return
        self.rdc.pop(seq, None)
        self._update_floor_after_ack(entry.consumer_seq, seq)
        if self.stream.config.retention != "limits":
            self.stream.acknowledged(seq)
        self._dirty()
        self.kick()

    def _queue_redelivery(self, seq: int) -> None:
        # First in, first out, as nats-server's redelivery queue (expired
        # messages are queued in stream order by `_check_pending`).
        if seq not in self._rdq_set:
            self._rdq_set.add(seq)
            self.rdq.append(seq)

    # -- redelivery timer --------------------------------------------------------
    def _arm_pending_timer(self, due_ns: int) -> None:
        if self._closed:
            return
        if self._ptmr is not None and self._ptmr_due <= due_ns:
            return
        if self._ptmr is not None:
            self._ptmr.cancel()
        self._ptmr_due = due_ns
        delay = max(due_ns - self.clock.now_ns(), 0) / NS
        self._ptmr = self.clock.call_later(delay, self._check_pending)

    def _check_pending(self) -> None:
        self._ptmr = None
        if self._closed:
            return
        now = self.clock.now_ns()
        next_due = 0
        expired = False
        for seq, entry in self.pending.items():
            if seq in self._rdq_set:
                continue
            if entry.due_ns <= now:
                self._queue_redelivery(seq)
                expired = True
            elif next_due == 0 or entry.due_ns < next_due:
                next_due = entry.due_ns
        if next_due:
            self._arm_pending_timer(next_due)
        if expired:
            self.kick()

    # -- reset -------------------------------------------------------------------
    def reset(self, seq: int) -> int:
        """CONSUMER.RESET (ADR-60); returns `reset_seq` or raises ApiError 10204."""
        if seq > 0:
            if self.config.deliver_policy not in ("all", "by_start_sequence", "by_start_time"):
                raise ApiError(Err.CONSUMER_INVALID_RESET, err="not allowed")
            if self.config.deliver_policy != "all" and seq < self.start_seq_for_policy():
                raise ApiError(Err.CONSUMER_INVALID_RESET, err="below start seq")
            reset_seq = seq
        else:
            reset_seq = self.asflr + 1
        # Interest retention (nats-server 2.15): moving the floor up acknowledges
        # what it passes; work queues keep their messages (nothing was acked).
        interest = self.stream.config.retention == "interest"
        self.pending.clear()
        self.rdc.clear()
        self.rdq.clear()
        self._rdq_set.clear()
        self.dropped.clear()
        self.lps.clear()
        if self._ptmr is not None:
            self._ptmr.cancel()
            self._ptmr = None
        self.dseq = 0
        self.adflr = 0
        self.asflr = reset_seq - 1
        self.sseq = reset_seq
        self.last_sseq = reset_seq - 1
        self._replay_prev = None
        self.npc = self._count_pending(self.sseq)
        # (nats-server 2.15.1 acknowledges nothing when the reset goes past the
        # stream's end.)
        store_state = self._store_state() if interest else None
        if store_state is not None and reset_seq - 1 <= int(store_state.last_seq):
            passed = [
                m.seq
                for m in self.stream.store.iter_range(
                    int(store_state.first_seq), reset_seq - 1, self._store_filters
                )
            ]
            for passed_seq in passed:
                self.stream.acknowledged(passed_seq)
        self._dirty()
        self.kick()
        return reset_seq

    # -- info --------------------------------------------------------------------
    def recount(self) -> None:
        """Make `num_pending` exact again. The counter is kept incrementally, but
        the stream removes messages (limits, TTL, single deletes) without telling
        consumers; a recount per pull request and per info keeps it honest."""
        if not self.lps:
            self.npc = self._count_pending(self.sseq)

    def info(self) -> dict[str, Any]:
        self.recount()
        now = self.clock.now_ns()
        delivered: dict[str, Any] = {"consumer_seq": self.dseq, "stream_seq": self.last_sseq}
        if self.delivered_last_ns:
            delivered["last_active"] = format_time(self.delivered_last_ns)
        # The internal floor may include non-matching messages skipped past the
        # last delivery; nats-server reports it no higher than what was delivered.
        floor: dict[str, Any] = {
            "consumer_seq": self.adflr,
            "stream_seq": min(self.asflr, max(self.last_sseq, 0)),
        }
        if self.ack_last_ns:
            floor["last_active"] = format_time(self.ack_last_ns)
        out: dict[str, Any] = {
            "stream_name": self.stream.name,
            "name": self.name,
            "created": format_time(self.created_ns),
            "config": self.config.to_json(),
            "delivered": delivered,
            "ack_floor": floor,
            "num_ack_pending": len(self.pending),
            "num_redelivered": len(self.rdc),
            "num_waiting": len(self.waiting),
            "num_pending": self.npc,
        }
        if self.push is not None:
            out["push_bound"] = self.push.has_interest()
        if self.paused:
            out["paused"] = True
            out["pause_remaining"] = self.config.pause_until_ns - now
        out["ts"] = format_time(now)
        return out
