"""One JetStream stream: the publish path, limits, retention, dedup, expiry.

`Stream` owns a `StreamStore` (memory or file; it never knows which) and the
consumers registered on it (`StreamListener`s, see seams.py). It has no
sockets and no asyncio: the publish pipeline (publish.py) hands it published messages and sends
whatever it answers; time comes from the injected clock.

Publish path (`accept()`), in nats-server's order: the stream's
`subject_transform` maps the subject first (a subject it does not match
stays), then sealed (10109), message size (10054), `Nats-Expected-Stream`
(10060), no `Nats-Stream-Source` (10227), dedup by `Nats-Msg-Id` within
`duplicate_window` (answers the ORIGINAL sequence with `duplicate: true`),
`Nats-Expected-Last-Sequence` (10071), `-Last-Subject-Sequence` (10071; a
value that does not parse counts as 0, and 10164 never arises: nats-server
sends it only for in-flight races that a single-threaded stream cannot have),
`-Last-Msg-Id` (10070), `Nats-Rollup` (needs `allow_rollup_hdrs`, 10111),
`Nats-TTL` (needs `allow_msg_ttl`, 10166/10165), account limits, discard-new
limits (10077); then store, record the msg id, apply rollup and discard-old
limits, arm TTL / max-age timers, and build the `republish` message
(republish.py) the pipeline sends before the ack. Mirrors and sources store
through the same path with `Sourced` (no expectation checks; a mirror keeps
the origin's sequence and time, its gaps become deleted sequences).

Invariants:
- Listeners hear about a message (`on_stored`) only after it is in the store,
  and (with `sync_always`) after the group-commit fsync: `accept()` stores,
  `deliver()` notifies; the publish pipeline decides when to call the second.
- Interest retention with no consumer (nor mirror or source still to copy
  it, `held_by_readers`) that wants a message keeps nothing; workqueue
  removes a message once acknowledged (`acknowledged(seq)`).
- The dedup table (dedup.py) only holds ids younger than `duplicate_window`;
  it is rebuilt from the stored headers when a stream is reopened.
- A header block whose only JetStream header is `Nats-Msg-Id` (what a sink
  sends with every message) takes `_msg_id_only`, with the answers a full
  parse would give; anything else is parsed in full.
- `removals` grows whenever the stream removes messages on its own (limits,
  max_age, TTL, rollup, purge, message delete). Only purges and max_age
  expiry reach consumers (`on_purged`), so a consumer keeping `num_pending`
  incrementally could tell from it that a recount is due; consumers today
  recount per pull request and per info instead.
"""

from __future__ import annotations

import heapq
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.gotime import DurationError, format_duration, parse_duration_ns
from jetstream_server.core.headers import HeaderError, Headers, get_header, parse_headers
from jetstream_server.jetstream import counters, schedules
from jetstream_server.jetstream.dedup import DedupTable
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.persistence import write_json_atomic
from jetstream_server.jetstream.republish import Republisher
from jetstream_server.jetstream.seams import StreamListener
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.jetstream.transform import SubjectTransform, TransformError
from jetstream_server.store.base import StoredMessage, StreamStore

logger = logging.getLogger(__name__)

NS = 1_000_000_000

MSG_ID = "Nats-Msg-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJ_SEQ = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJ_SEQ_SUBJ = "Nats-Expected-Last-Subject-Sequence-Subject"
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
ROLLUP = "Nats-Rollup"
MSG_TTL = "Nats-TTL"
STREAM_SOURCE = "Nats-Stream-Source"

# A cheap pre-check before parsing headers at all: every header JetStream acts
# on starts with "Nats-".
_JS_HEADER_MARK = b"Nats-"
_ONLY_MSG_ID_MARK = b"\r\nNats-Msg-Id:"
_NO_STATUS_LINE = b"NATS/1.0\r\n"
# a block of that one header and nothing else, as the sink sends it: `<this><value>\r\n\r\n`
_MSG_ID_BLOCK = b"NATS/1.0\r\nNats-Msg-Id:"
_MSG_ID_BLOCK_LEN: Final = len(_MSG_ID_BLOCK)


def parse_ttl_ns(value: str) -> int:
    """A `Nats-TTL` value in ns: Go duration ("1s", "1m30s"), bare seconds, or
    "never" (-1). Raises ApiError MESSAGE_TTL_INVALID for anything else or < 1 s."""
    text = value.strip()
    if text == "never":
        return -1
    ttl: int | None = None
    if text.isdigit():
        ttl = int(text) * NS
    else:
        try:
            ttl = parse_duration_ns(text)
        except DurationError:
            ttl = None
    if ttl is None or ttl < NS:
        raise ApiError(Err.MESSAGE_TTL_INVALID)
    return ttl


class PubAck:
    """The outcome of one publish, before it is sent (a plain slotted class:
    one is made per published message, a frozen dataclass costs more)."""

    __slots__ = ("seq", "duplicate", "error", "msg", "republish")

    def __init__(
        self,
        seq: int,
        duplicate: bool = False,
        error: ApiError | None = None,
        msg: StoredMessage | None = None,  # set when a new message was stored
        republish: tuple[str, bytes, bytes] | None = None,  # (subject, headers, payload)
    ) -> None:
        self.seq = seq
        self.duplicate = duplicate
        self.error = error
        self.msg = msg
        self.republish = republish


class Sourced(NamedTuple):
    """A message a mirror or source brings in (not a client's publish): its
    expectation headers are not checked and, for a mirror, it keeps the
    origin's sequence and time (`seq`, `timestamp_ns`; 0 for a source)."""

    seq: int = 0
    timestamp_ns: int = 0


class _HeaderPlan(NamedTuple):
    """What the JetStream headers of an accepted publish ask for after storing."""

    msg_id: str
    rollup: str
    ttl_ns: int
    incr: int | None = None  # counters: the Nats-Incr of the publish
    schedule_due_ns: int | None = None  # schedules: a schedule message, due then
    headers: bytes | None = None  # the headers to store when the checks changed them
    purge_subject: str = ""  # schedules: a produced one-shot message purges its schedule


AccountCheck = Callable[["Stream", int], None]


DEDUP_SNAPSHOT = "dedup.json"
_DEDUP_TIMER_MIN_S = 1.0


class Stream:
    """A stream with its store, consumers and limits (see module docstring)."""

    def __init__(
        self,
        config: StreamConfig,
        store: StreamStore,
        clock: Clock,
        *,
        directory: Path | None = None,
        created_ns: int = 0,
        account_check: AccountCheck | None = None,
    ) -> None:
        self.name = config.name
        self.config = config
        self.store = store
        self.clock = clock
        self.directory = directory
        self.created_ns = created_ns or clock.now_ns()
        self.consumers: dict[str, StreamListener] = {}
        self._account_check = account_check
        self._dedup = DedupTable(config.duplicate_window)
        self._dedup_timer: TimerHandle | None = None
        self.last_msg_id = ""
        self._age_timer: TimerHandle | None = None
        self._ttl_heap: list[tuple[int, int]] = []  # (expire_ns, seq)
        self._ttl_never: set[int] = set()  # published with Nats-TTL: never (no max_age)
        self._ttl_timer: TimerHandle | None = None
        self._ttl_due_ns = 0
        self.scheduler = schedules.Scheduler(clock, self._run_schedule)
        self._producing = False  # storing what a schedule produced
        self.closed = False
        # Bumped whenever the stream itself removes messages (module docstring).
        self.removals = 0
        # Told after listeners of every message stored (mirrors and sources follow it).
        self.on_appended: Callable[[Stream], None] | None = None
        # The mirror/source state for stream info, set by the sourcing code.
        self.sourcing_info: Callable[[], dict[str, Any]] | None = None
        # True while a mirror or source of this stream still has to copy (seq, subject).
        self.held_by_readers: Callable[[int, str], bool] | None = None
        self._plan_limits()
        if config.first_seq > 1 and store.state().last_seq == 0:
            store.skip_to(config.first_seq)
        self._rebuild_after_open()

    # -- consumers (seams.py) --------------------------------------------------
    def add_consumer(self, name: str, consumer: StreamListener) -> None:
        if (
            name not in self.consumers
            and self.config.max_consumers > 0
            and len(self.consumers) >= self.config.max_consumers
        ):
            raise ApiError(Err.MAXIMUM_CONSUMERS_LIMIT)
        self.consumers[name] = consumer

    def remove_consumer(
        self, name: str, from_seq: int = 0, filters: tuple[str, ...] | None = None
    ) -> None:
        """Forget a consumer. On an interest stream, what it alone still wanted goes:
        only messages at or above `from_seq` (its lowest pending, dropped or next
        sequence) matching its `filters` can be such, so only those are checked."""
        self.consumers.pop(name, None)
        if self.config.retention != "interest":
            return
        if from_seq <= 0 and filters is None:
            self._drop_unwanted_all()
            return
        state = self.store.state()
        start = max(from_seq, state.first_seq)
        if state.msgs == 0 or start > state.last_seq:
            return
        doomed = [
            m.seq
            for m in self.store.iter_range(start, state.last_seq, filters)
            if not self._wanted(m)
        ]
        for seq in doomed:
            self.store.remove(seq)

    def acknowledged(self, seq: int) -> None:
        retention = self.config.retention
        if retention == "limits":
            return
        if retention == "workqueue":
            self.store.remove(seq)
            return
        msg = self.store.load(seq)
        if msg is not None and not self._wanted(msg):
            self.store.remove(seq)

    def _wanted(self, msg: StoredMessage) -> bool:
        if any(c.wants(msg.seq, msg.subject) for c in self.consumers.values()):
            return True
        # mirrors and sources that have not copied it yet count as interest, as
        # nats-server's internal sourcing consumers do
        held = self.held_by_readers
        return held is not None and held(msg.seq, msg.subject)

    def _drop_unwanted_all(self) -> None:
        state = self.store.state()
        if state.msgs == 0:
            return
        doomed = [m.seq for m in self.store.iter_range(state.first_seq, state.last_seq) if not self._wanted(m)]
        for seq in doomed:
            self.store.remove(seq)

    # -- publish path ----------------------------------------------------------
    def _plan_limits(self) -> None:
        """Precompute what the publish path must check for the current config."""
        cfg = self.config
        self._max_size = cfg.max_msg_size if cfg.max_msg_size >= 0 else 1 << 62
        self._discard_new = cfg.discard == "new" and (
            cfg.max_msgs > 0 or cfg.max_bytes > 0 or cfg.discard_new_per_subject
        )
        self._limited = cfg.max_msgs_per_subject > 0 or (
            cfg.discard != "new" and (cfg.max_msgs > 0 or cfg.max_bytes > 0)
        )
        self._input_transform: SubjectTransform | None = None
        if cfg.subject_transform is not None and cfg.subject_transform.dest:
            try:
                self._input_transform = SubjectTransform(
                    cfg.subject_transform.src, cfg.subject_transform.dest
                )
            except TransformError:  # refused when the config was checked
                logger.error("stream %s: bad subject transform kept out", self.name)
        self._republisher = (
            Republisher(self.name, cfg.republish) if cfg.republish is not None else None
        )
        self.counter = cfg.allow_msg_counter  # counters.py

    def accept(
        self, subject: str, headers: bytes | None, payload: bytes, sourced: Sourced | None = None
    ) -> PubAck:
        """Validate and store one published message (listeners not yet told)."""
        if self._input_transform is not None:
            mapped = self._input_transform.match(subject)
            if mapped is not None:  # no filtering: a subject it does not map stays
                subject = mapped
        if self.config.sealed:
            return self._fail(Err.STREAM_SEALED)
        hdr_len = len(headers) if headers else 0
        if hdr_len + len(payload) > self._max_size:
            return self._fail(Err.STREAM_MESSAGE_EXCEEDS_MAXIMUM)
        if hdr_len > 65536:
            return self._fail(Err.STREAM_HEADER_EXCEEDS_MAXIMUM)
        now = self.clock.now_ns()
        if sourced is not None and sourced.seq:
            now = sourced.timestamp_ns or now
            if not self._mirror_position(sourced.seq, now):
                return PubAck(0, duplicate=True)
        plan: _HeaderPlan | None = None
        msg_id = ""  # the Nats-Msg-Id of a block `_msg_id_only` took (no plan then)
        if headers and (headers[:_MSG_ID_BLOCK_LEN] == _MSG_ID_BLOCK or _JS_HEADER_MARK in headers):
            quick = self._msg_id_only(headers, now) if sourced is None and not self.counter else None
            if isinstance(quick, str):
                msg_id = quick
            else:
                planned = (
                    quick if quick is not None
                    else self._plan_headers(headers, subject, now, payload, sourced)
                )
                if isinstance(planned, PubAck):
                    return planned
                plan = planned
        if self.counter:
            if plan is None or plan.incr is None:
                return self._fail(Err.MESSAGE_INCR_MISSING)
            try:
                headers, payload = self._count(subject, headers, plan.incr, payload, sourced)
            except ApiError as exc:
                return PubAck(0, error=exc)
        if plan is not None and plan.headers is not None:
            headers = plan.headers
        if self._account_check is not None or self._discard_new:
            size = self.store.msg_size(subject, headers, payload)
            if self._account_check is not None:
                try:
                    self._account_check(self, size)
                except ApiError as exc:
                    return PubAck(0, error=exc)
            if self._discard_new:
                refused = self._discard_new_check(subject, size)
                if refused is not None:
                    return refused
        republish_to = self._republisher.target(subject) if self._republisher is not None else None
        if republish_to is not None:
            info = self.store.subject_info(subject)
            previous = info.last_seq if info is not None else 0
        seq = self.store.store(subject, headers, payload, now)
        msg = StoredMessage(subject, seq, now, headers, payload)
        if plan is None:
            self.last_msg_id = msg_id
            if msg_id:
                self._dedup_record(msg_id, seq, now)
        else:
            self._apply_plan(plan, subject, seq, now)
        if self._limited:
            self._enforce_limits(subject)
        if self._age_timer is None and self.config.max_age > 0:
            self._arm_age_timer()
        if republish_to is not None and self._republisher is not None:
            rp_headers, rp_payload = self._republisher.message(
                subject, seq, now, previous, headers, payload
            )
            return PubAck(seq, msg=msg, republish=(republish_to, rp_headers, rp_payload))
        return PubAck(seq, msg=msg)

    def _mirror_position(self, seq: int, timestamp_ns: int) -> bool:
        """Make `seq` the next sequence of a mirror; False when it is already stored.

        Like nats-server's skipMsgs, the origin's gaps (deleted, expired or
        filtered-out messages) become deleted sequences here too.
        """
        store = self.store
        state = store.state()
        if seq <= state.last_seq:
            return False
        if seq > state.last_seq + 1:
            if state.msgs == 0:
                store.compact(seq)
            else:
                store.skip_msgs(state.last_seq + 1, seq - state.last_seq - 1)
        return True

    def _count(self, subject: str, headers: bytes | None, incr: int, payload: bytes,
               sourced: Sourced | None) -> tuple[bytes | None, bytes]:
        """A counter publish: the subject's new total as the payload; a sourced
        message adds what its origin's total moved (counters.py); the
        ``Nats-Counter-Sources`` kept on the subject goes on."""
        last = self.store.load_last(subject)
        total = counters.current_total(last.data if last is not None else None)
        sources = counters.parse_sources(
            get_header(last.headers, counters.COUNTER_SOURCES) if last is not None else None)
        if sourced is not None and headers is not None:
            origin = get_header(headers, STREAM_SOURCE)
            if origin:
                incr = counters.sourced_increment(sources, origin, subject, payload)
                headers = counters.set_header(headers, counters.INCR, str(incr))
        if sources and headers is not None:
            headers = counters.set_header(headers, counters.COUNTER_SOURCES,
                                          counters.encode_sources(sources))
        return headers, counters.total_payload(total + incr)

    def _msg_id_only(self, headers: bytes, now: int) -> str | PubAck | None:
        """The `Nats-Msg-Id` of a block whose one JetStream header it is (a sink's
        publish; "" when empty), the duplicate's answer, or None when the block
        needs the full parse (no `_HeaderPlan` built: storing it needs none).

        Same answers as `_plan_headers`: every other header it looks up is
        absent (no "nats-" in any case elsewhere, no status line), and the
        value is what `parse_headers` makes of the line."""
        last = len(headers) - 4
        if (
            headers[:_MSG_ID_BLOCK_LEN] == _MSG_ID_BLOCK
            and headers.find(b"\r\n", _MSG_ID_BLOCK_LEN) == last
            and headers[last:] == b"\r\n\r\n"
        ):
            # the sink's block: its one line is the id (whatever the value holds)
            raw = headers[_MSG_ID_BLOCK_LEN:last]
        else:
            at = headers.find(_ONLY_MSG_ID_MARK)
            if (
                at < 0
                or not headers.startswith(_NO_STATUS_LINE)
                or headers.lower().count(b"nats-") != 1
            ):
                return None
            start = at + len(_ONLY_MSG_ID_MARK)
            end = headers.find(b"\r\n", start)
            raw = headers[start : end if end >= 0 else len(headers)]
        msg_id = raw.strip().decode("utf-8", "replace")
        if msg_id:
            found = self._dedup.lookup(msg_id, now)
            if found is not None:
                return PubAck(found, duplicate=True)
        return msg_id

    def _plan_headers(
        self,
        headers: bytes,
        subject: str,
        now: int,
        payload: bytes = b"",
        sourced: Sourced | None = None,
    ) -> _HeaderPlan | PubAck:
        """Check the JetStream headers of a publish; what to do after storing it."""
        try:
            hdr = parse_headers(headers)
        except HeaderError:
            return _HeaderPlan("", "", 0)
        cfg = self.config
        if sourced is not None:
            return self._plan_sourced(hdr, now, sourced)
        try:
            incr = counters.check_incr(hdr, payload, self.counter)
        except ApiError as exc:
            return PubAck(0, error=exc)
        expected = hdr.get(EXPECTED_STREAM)
        if expected is not None and expected != self.name:
            return self._fail(Err.STREAM_NOT_MATCH)
        if hdr.get(STREAM_SOURCE) is not None:  # only mirrors and sources write it
            return self._fail(Err.MESSAGE_SOURCE_HDR_NOT_ALLOWED)
        msg_id = hdr.get(MSG_ID) or ""
        if msg_id:
            found = self._dedup_lookup(msg_id, now)
            if found is not None:
                return PubAck(found, duplicate=True)
        failed = self._check_expectations(hdr, subject)
        if failed is not None:
            return failed
        rollup = (hdr.get(ROLLUP) or "").strip()
        if rollup:
            if not cfg.allow_rollup_hdrs:
                return self._fail(Err.STREAM_ROLLUP_FAILED, err="rollup not permitted")
            if rollup not in ("sub", "all"):
                return self._fail(Err.STREAM_ROLLUP_FAILED, err=f'rollup value invalid: "{rollup}"')
            if rollup == "all" and cfg.deny_purge:
                return self._fail(Err.STREAM_ROLLUP_FAILED, err="rollup not permitted")
        ttl_ns = 0
        ttl_raw = hdr.get(MSG_TTL)
        if ttl_raw is not None:
            if not cfg.allow_msg_ttl:
                return self._fail(Err.MESSAGE_TTL_DISABLED)
            try:
                ttl_ns = parse_ttl_ns(ttl_raw)
            except ApiError as exc:
                return PubAck(0, error=exc)
        if b"Nats-Schedule" in headers and self._producing:
            # what a schedule produced: the server's own headers, not checked
            purge = hdr.get(schedules.SCHEDULER) or "" if hdr.get(schedules.NEXT) == "purge" else ""
            return _HeaderPlan(msg_id, rollup, ttl_ns, incr, None, None, purge)
        if b"Nats-Schedule" in headers:
            try:
                checked = schedules.check_publish(
                    hdr, subject, cfg.subjects, cfg.allow_msg_schedules,
                    cfg.allow_msg_ttl, now, self._last_headers,
                )
            except ApiError as exc:
                return PubAck(0, error=exc)
            new_headers = None
            if checked.add_rollup:
                new_headers = headers[:-2] + b"Nats-Rollup: sub\r\n\r\n"
                rollup = "sub"
            purge = (hdr.get(schedules.SCHEDULER) or "") if hdr.get(schedules.NEXT) else ""
            return _HeaderPlan(msg_id, rollup, ttl_ns, incr, checked.due_ns, new_headers, purge)
        return _HeaderPlan(msg_id, rollup, ttl_ns, incr)

    def _last_headers(self, subject: str) -> Headers | None:
        last = self.store.load_last(subject)
        if last is None:
            return None
        try:
            return parse_headers(last.headers) if last.headers else Headers()
        except HeaderError:
            return Headers()

    def _run_schedule(self, subject: str, seq: int, due_ns: int) -> None:
        """A schedule is due: publish what it produces into this stream."""
        if self.closed:
            return
        msg = self.store.load(seq)
        if msg is None or not msg.headers:
            return
        try:
            schedule = parse_headers(msg.headers)
            content: tuple[Headers, bytes] = (schedule, msg.data)
            source = schedule.get(schedules.SOURCE)
            if source:
                last = self.store.load_last(source)
                if last is not None:
                    content = (parse_headers(last.headers) if last.headers else Headers(), last.data)
        except HeaderError:
            return
        target, headers, payload, repeat_at = schedules.fire(
            subject, schedule, content, due_ns, self.clock.now_ns()
        )
        self._producing = True
        try:
            ack = self.accept(target, headers, payload)
        finally:
            self._producing = False
        if ack.error is not None:
            logger.warning("stream %s: schedule %s produced nothing: %s",
                           self.name, subject, ack.error.to_json()["description"])
        elif ack.msg is not None:
            self.deliver(ack.msg)
        if repeat_at is not None:
            self.scheduler.add(subject, seq, repeat_at)

    def _plan_sourced(self, hdr: Headers, now: int, sourced: Sourced) -> _HeaderPlan | PubAck:
        """A sourced message is stored as the origin had it: no expectations;
        a source (not a mirror) still drops duplicates by `Nats-Msg-Id`;
        rollups and TTLs act only where this stream allows them."""
        msg_id = hdr.get(MSG_ID) or ""
        if msg_id and not sourced.seq:
            found = self._dedup_lookup(msg_id, now)
            if found is not None:
                return PubAck(found, duplicate=True)
        rollup = (hdr.get(ROLLUP) or "").strip() if self.config.allow_rollup_hdrs else ""
        ttl_ns = 0
        ttl_raw = hdr.get(MSG_TTL)
        if ttl_raw is not None and self.config.allow_msg_ttl:
            try:
                ttl_ns = parse_ttl_ns(ttl_raw)
            except ApiError:
                ttl_ns = 0
        incr_raw = hdr.get(counters.INCR)
        incr: int | None = None
        if incr_raw:  # stored verbatim, but it must be an integer (nats-server's getMessageIncr)
            if counters.INTEGER.fullmatch(incr_raw) is None:
                return PubAck(0, error=ApiError(Err.MESSAGE_INCR_INVALID))
            incr = int(incr_raw)
        return _HeaderPlan(msg_id, rollup if rollup in ("sub", "all") else "", ttl_ns, incr)

    def _apply_plan(self, plan: _HeaderPlan, subject: str, seq: int, now: int) -> None:
        if plan.schedule_due_ns is not None:
            self.scheduler.add(subject, seq, plan.schedule_due_ns)
        if plan.purge_subject:
            self.removals += bool(self.store.purge(subject=plan.purge_subject))
            self.scheduler.remove(plan.purge_subject)
        self.last_msg_id = plan.msg_id
        if plan.msg_id:
            self._dedup_record(plan.msg_id, seq, now)
        if plan.rollup == "sub":
            self.removals += bool(self.store.purge(subject=subject, keep=1))
        elif plan.rollup == "all":
            self.removals += bool(self.store.purge(keep=1))
        if plan.ttl_ns > 0:
            self._schedule_ttl(now + plan.ttl_ns, seq)
        elif plan.ttl_ns < 0:
            self._ttl_never.add(seq)

    def deliver(self, msg: StoredMessage) -> None:
        """Tell listeners about a stored message; apply interest retention."""
        if self.consumers:
            for consumer in list(self.consumers.values()):
                try:
                    consumer.on_stored(msg)
                except Exception:  # a broken consumer must not lose the stream's other consumers
                    logger.exception("stream %s: consumer %s failed on message %d",
                                     self.name, consumer.name, msg.seq)
        if self.config.retention == "interest" and not self._wanted(msg):
            self.store.remove(msg.seq)
        if self.on_appended is not None:
            self.on_appended(self)

    def _fail(self, error: Err, **fields: Any) -> PubAck:
        return PubAck(seq=0, error=ApiError(error, **fields))

    def _check_expectations(self, hdr: Headers, subject: str) -> PubAck | None:
        # Like nats-server, a value that does not parse counts as 0.
        raw = hdr.get(EXPECTED_LAST_SEQ)
        if raw is not None:
            last = self.store.state().last_seq
            if _seq_value(raw) != last:
                return self._fail(Err.STREAM_WRONG_LAST_SEQUENCE, seq=last)
        raw = hdr.get(EXPECTED_LAST_SUBJ_SEQ)
        if raw is not None:
            target = hdr.get(EXPECTED_LAST_SUBJ_SEQ_SUBJ) or subject
            if "*" in target or ">" in target:
                last_msg = self.store.load_last(target)
                last = last_msg.seq if last_msg is not None else 0
            else:
                info = self.store.subject_info(target)
                last = info.last_seq if info is not None else 0
            if _seq_value(raw) != last:
                return self._fail(Err.STREAM_WRONG_LAST_SEQUENCE, seq=last)
        raw = hdr.get(EXPECTED_LAST_MSG_ID)
        if raw is not None and raw != self.last_msg_id:
            return self._fail(Err.STREAM_WRONG_LAST_MSG_ID, id=self.last_msg_id)
        return None

    def _discard_new_check(self, subject: str, size: int) -> PubAck | None:
        cfg = self.config
        state = self.store.state()
        if cfg.max_msgs > 0 and state.msgs >= cfg.max_msgs:
            return self._fail(Err.STREAM_STORE_FAILED, err="maximum messages exceeded")
        if cfg.max_bytes > 0 and state.bytes + size > cfg.max_bytes:
            return self._fail(Err.STREAM_STORE_FAILED, err="maximum bytes exceeded")
        if cfg.discard_new_per_subject and cfg.max_msgs_per_subject > 0:
            info = self.store.subject_info(subject)
            if info is not None and info.msgs >= cfg.max_msgs_per_subject:
                return self._fail(Err.STREAM_STORE_FAILED, err="maximum messages per subject exceeded")
        return None

    def _enforce_limits(self, subject: str) -> None:
        cfg = self.config
        store = self.store
        if cfg.max_msgs_per_subject > 0:
            info = store.subject_info(subject)
            if info is not None and info.msgs > cfg.max_msgs_per_subject:
                store.purge(subject=subject, keep=cfg.max_msgs_per_subject)
                self.removals += 1
        if cfg.discard == "new":
            return
        if cfg.max_msgs > 0:
            state = store.state()
            if state.msgs > cfg.max_msgs:
                self._remove_oldest(state.msgs - cfg.max_msgs)
        if cfg.max_bytes > 0:
            state = store.state()
            while state.bytes > cfg.max_bytes and state.msgs > 0:
                first = store.load_next(state.first_seq)
                if first is None:
                    break
                store.remove(first.seq)
                self.removals += 1
                state = store.state()

    def _remove_oldest(self, count: int) -> None:
        self.removals += 1
        state = self.store.state()
        if state.num_deleted == 0:
            self.store.compact(state.first_seq + count)
            return
        seq = state.first_seq
        while count > 0:
            msg = self.store.load_next(seq)
            if msg is None:
                return
            self.store.remove(msg.seq)
            seq = msg.seq + 1
            count -= 1

    # -- dedup -----------------------------------------------------------------
    def is_duplicate(self, msg_id: str, now: int) -> bool:
        """`msg_id` was stored within the duplicate window (atomic batch checks)."""
        return self._dedup.lookup(msg_id, now) is not None

    def _dedup_lookup(self, msg_id: str, now: int) -> int | None:
        return self._dedup.lookup(msg_id, now)

    def _dedup_record(self, msg_id: str, seq: int, ts: int) -> None:
        self._dedup.record(msg_id, seq, ts)
        if self._dedup_timer is None:
            self._arm_dedup_timer()

    def _arm_dedup_timer(self) -> None:
        """Prune when the oldest id leaves the window, publishing or not (nats-server's
        purgeMsgIds timer): an idle stream does not keep its ids in memory."""
        due = self._dedup.due_ns
        if due is None or self.closed:
            return
        # at most once a second: lookups prune exactly on their own, the timer
        # only frees memory (while publishing goes on, ids fall due every few µs)
        delay_s = max((due - self.clock.now_ns()) / NS, _DEDUP_TIMER_MIN_S)
        self._dedup_timer = self.clock.call_later(delay_s, self._expire_dedup)

    def _expire_dedup(self) -> None:
        self._dedup_timer = None
        self._dedup.prune(self.clock.now_ns())
        self._arm_dedup_timer()

    def _rebuild_after_open(self) -> None:
        """Dedup ids, the last msg id and TTL timers from what the store holds."""
        state = self.store.state()
        if state.msgs == 0:
            return
        now = self.clock.now_ns()
        if not self._load_dedup_snapshot(state.last_seq, now):
            start = self.store.seq_for_time(now - self.config.duplicate_window)
            last = self.store.load(state.last_seq)
            if last is not None and last.headers:
                self.last_msg_id = _header(last.headers, MSG_ID) or ""
            for msg in self.store.iter_range(start, state.last_seq):
                if msg.headers and b"Nats-Msg-Id" in msg.headers:
                    msg_id = _header(msg.headers, MSG_ID)
                    if msg_id:
                        self._dedup_record(msg_id, msg.seq, msg.timestamp_ns)
        if self.config.allow_msg_ttl:
            for msg in self.store.iter_range(state.first_seq, state.last_seq):
                if msg.headers and b"Nats-TTL" in msg.headers:
                    raw = _header(msg.headers, MSG_TTL)
                    if raw is None:
                        continue
                    try:
                        ttl = parse_ttl_ns(raw)
                    except ApiError:
                        continue
                    if ttl > 0:
                        self._schedule_ttl(msg.timestamp_ns + ttl, msg.seq)
                    elif ttl < 0:
                        self._ttl_never.add(msg.seq)
        if self.config.allow_msg_schedules:
            self._rebuild_schedules(state.first_seq, state.last_seq, now)
        if self.config.max_age > 0:
            self._expire_by_age()

    def _rebuild_schedules(self, first: int, last: int, now: int) -> None:
        """The stored schedules are due again after a restart (a missed one fires
        once, a repeating one counts from its last due time it cannot know: now)."""
        for msg in self.store.iter_range(first, last):
            if not msg.headers or b"Nats-Schedule:" not in msg.headers:
                continue
            try:
                due = schedules.stored_due(parse_headers(msg.headers), msg.timestamp_ns, now)
            except HeaderError:
                continue
            if due is not None:
                self.scheduler.add(msg.subject, msg.seq, due)

    # -- expiry ----------------------------------------------------------------
    # max_age removes every message older than the limit except those published
    # with `Nats-TTL: never`; a finite Nats-TTL expires a message earlier (the
    # smaller of the two wins, as in nats-server). With
    # `subject_delete_marker_ttl`, a subject emptied by either expiry gets a
    # marker message (`Nats-Marker-Reason: MaxAge`, its own `Nats-TTL`,
    # `Nats-Rollup: sub`), which expires in turn without a marker of its own.
    def _arm_age_timer(self) -> None:
        state = self.store.state()
        if self.closed or self.config.max_age <= 0 or state.msgs == 0:
            self._age_timer = None
            return
        first = self.store.load_next(state.first_seq)
        while first is not None and first.seq in self._ttl_never:
            first = self.store.load_next(first.seq + 1)
        if first is None:
            self._age_timer = None
            return
        due = first.timestamp_ns + self.config.max_age
        delay = max(0.0, (due - self.clock.now_ns()) / NS)
        self._age_timer = self.clock.call_later(delay, self._expire_by_age)

    def _expire_by_age(self) -> None:
        self._age_timer = None
        if self.closed:
            return
        cutoff = self.clock.now_ns() - self.config.max_age
        seq = self.store.seq_for_time(cutoff + 1)
        first = self.store.state().first_seq
        if self._ttl_never:
            self._ttl_never = {n for n in self._ttl_never if n >= first}
        if seq > first:
            self.removals += 1
            markers = self.config.subject_delete_marker_ttl > 0
            never = [n for n in self._ttl_never if n < seq]
            if not markers and not never:
                if self.store.compact(seq):
                    self._notify_purged(self.store.state().first_seq)
            else:
                emptied: dict[str, bool] = {}
                removed: list[int] = []
                for msg in list(self.store.iter_range(first, seq - 1)):
                    if msg.seq in self._ttl_never:
                        continue
                    self.store.remove(msg.seq)
                    removed.append(msg.seq)
                    if markers:
                        emptied[msg.subject] = _is_marker(msg.headers)
                self._notify_purged(self.store.state().first_seq, removed)
                self._place_markers(emptied)
        self._arm_age_timer()

    def _schedule_ttl(self, expire_ns: int, seq: int) -> None:
        heapq.heappush(self._ttl_heap, (expire_ns, seq))
        if self._ttl_timer is None or expire_ns < self._ttl_due_ns:
            if self._ttl_timer is not None:
                self._ttl_timer.cancel()
            self._ttl_due_ns = expire_ns
            delay = max(0.0, (expire_ns - self.clock.now_ns()) / NS)
            self._ttl_timer = self.clock.call_later(delay, self._expire_ttl)

    def _expire_ttl(self) -> None:
        self._ttl_timer = None
        if self.closed:
            return
        now = self.clock.now_ns()
        heap = self._ttl_heap
        markers = self.config.subject_delete_marker_ttl > 0
        emptied: dict[str, bool] = {}
        while heap and heap[0][0] <= now:
            _, seq = heapq.heappop(heap)
            msg = self.store.load(seq) if markers else None
            if self.store.remove(seq):
                self.removals += 1
                if msg is not None:
                    emptied[msg.subject] = _is_marker(msg.headers)
        self._place_markers(emptied)
        if heap:
            self._ttl_due_ns = heap[0][0]
            self._ttl_timer = self.clock.call_later(max(0.0, (heap[0][0] - now) / NS), self._expire_ttl)

    def _place_markers(self, emptied: dict[str, bool]) -> None:
        """A MaxAge marker on every subject expiry left empty (unless what went
        was itself a marker)."""
        ttl_s = self.config.subject_delete_marker_ttl // NS
        if ttl_s <= 0:
            return
        headers = (
            b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: %s\r\nNats-Rollup: sub\r\n\r\n"
            % format_duration(ttl_s * NS).encode()
        )
        for subject, was_marker in emptied.items():
            if was_marker or self.store.subject_info(subject) is not None:
                continue
            now = self.clock.now_ns()
            seq = self.store.store(subject, headers, b"", now)
            self.last_msg_id = ""
            self._schedule_ttl(now + ttl_s * NS, seq)
            self.deliver(StoredMessage(subject, seq, now, headers, b""))
        if emptied and self.config.max_age > 0 and self._age_timer is None:
            self._arm_age_timer()

    # -- administrative operations --------------------------------------------
    def update_config(self, config: StreamConfig) -> None:
        was_interest = self.config.retention == "interest"
        self.config = config
        self._dedup.set_window(config.duplicate_window)
        self._plan_limits()
        self._enforce_all_limits()
        if config.retention == "interest" and not was_interest:
            self._drop_unwanted_all()  # nothing is kept that no consumer wants
        if self._age_timer is not None:
            self._age_timer.cancel()
            self._age_timer = None
        if config.max_age > 0:
            self._arm_age_timer()

    def _enforce_all_limits(self) -> None:
        self.removals += 1
        cfg = self.config
        if cfg.max_msgs_per_subject > 0:
            for subject, info in self.store.subjects().items():
                if info.msgs > cfg.max_msgs_per_subject:
                    self.store.purge(subject=subject, keep=cfg.max_msgs_per_subject)
        state = self.store.state()
        if cfg.max_msgs > 0 and state.msgs > cfg.max_msgs:
            self._remove_oldest(state.msgs - cfg.max_msgs)
        if cfg.max_bytes > 0:
            state = self.store.state()
            while state.bytes > cfg.max_bytes and state.msgs > 0:
                first = self.store.load_next(state.first_seq)
                if first is None:
                    break
                self.store.remove(first.seq)
                state = self.store.state()

    def purge(self, subject: str | None, seq: int | None, keep: int | None) -> int:
        if self.config.sealed:
            raise ApiError(Err.STREAM_SEALED)
        if self.config.deny_purge:
            raise ApiError(Err.STREAM_PURGE_FAILED, err="stream purge not permitted")
        if seq is not None and keep is not None:
            raise ApiError(Err.BAD_REQUEST)
        filt = None if subject in (None, "", ">") else subject
        purged = self.store.purge_seqs(subject=filt, up_to_seq=seq, keep=keep)
        self.removals += 1
        self._notify_purged(self.store.state().first_seq, purged.seqs)
        return purged.msgs

    def delete_message(self, seq: int, erase: bool) -> None:
        if self.config.sealed:
            raise ApiError(Err.STREAM_SEALED)
        if self.config.deny_delete:
            raise ApiError(Err.STREAM_MSG_DELETE_FAILED, err="message delete not permitted")
        state = self.store.state()
        if seq > state.last_seq:
            raise ApiError(Err.STREAM_MSG_DELETE_FAILED, err="stream store EOF")
        if seq < state.first_seq:
            raise ApiError(Err.STREAM_MSG_DELETE_FAILED, err="no message found")
        if not self.store.remove(seq, erase=erase):
            # an interior sequence that is already gone
            raise ApiError(Err.SEQUENCE_NOT_FOUND, seq=seq)
        self.removals += 1

    def _notify_purged(self, first_seq: int, removed: Sequence[int] | None = ()) -> None:
        for consumer in list(self.consumers.values()):
            try:
                consumer.on_purged(first_seq, removed)
            except Exception:  # one consumer's bug must not stop the others hearing it
                logger.exception("stream %s: consumer %s failed on purge",
                                 self.name, consumer.name)

    def stop(self) -> None:
        """Server shutdown: stop consumers and timers, save the dedup table, close the store."""
        self._cancel_timers()
        for consumer in list(self.consumers.values()):
            try:
                consumer.stop()
            except Exception:  # keep stopping the rest, the store must still close
                logger.exception("stream %s: consumer failed to stop", self.name)
        self._save_dedup_snapshot()
        self.store.close()

    # -- dedup snapshot ----------------------------------------------------------
    # A clean shutdown saves the dedup table beside the store, stamped with the
    # store's last sequence; the next open loads it instead of re-reading every
    # message inside `duplicate_window` (nats-server's rebuild, which for a big
    # recent stream means reading all of it). The file is removed as soon as it
    # is read, so after a crash the next open always rebuilds from the messages.
    def _save_dedup_snapshot(self) -> None:
        if self.directory is None or not self.directory.is_dir():
            return
        body = {
            "last_seq": self.store.state().last_seq,
            "last_msg_id": self.last_msg_id,
            **self._dedup.to_json(),
        }
        try:
            write_json_atomic(self.directory / DEDUP_SNAPSHOT, body)
        except OSError as exc:  # the next open rebuilds from the messages instead
            logger.warning("stream %s: could not save the dedup table: %s", self.name, exc)

    def _load_dedup_snapshot(self, last_seq: int, now: int) -> bool:
        if self.directory is None:
            return False
        path = self.directory / DEDUP_SNAPSHOT
        try:
            raw = json.loads(path.read_bytes())
            path.unlink()
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as exc:
            logger.warning("stream %s: ignoring a damaged dedup table: %s", self.name, exc)
            path.unlink(missing_ok=True)
            return False
        if not isinstance(raw, dict) or raw.get("last_seq") != last_seq:
            return False
        try:
            self._dedup.load_json(raw, now)
            self.last_msg_id = str(raw.get("last_msg_id") or "")
        except (KeyError, TypeError, ValueError):
            self._dedup.clear()
            return False
        self._arm_dedup_timer()
        return True

    def delete(self) -> None:
        """Stream deleted: consumers told, data destroyed."""
        self._cancel_timers()
        for consumer in list(self.consumers.values()):
            try:
                consumer.on_stream_deleted()
            except Exception:  # the stream goes away regardless
                logger.exception("stream %s: consumer failed on delete", self.name)
        self.consumers.clear()
        self.store.destroy()

    def _cancel_timers(self) -> None:
        self.closed = True
        self.scheduler.stop()
        for timer in (self._age_timer, self._ttl_timer, self._dedup_timer):
            if timer is not None:
                timer.cancel()
        self._age_timer = self._ttl_timer = self._dedup_timer = None


def _is_marker(headers: bytes | None) -> bool:
    return bool(headers) and b"Nats-Marker-Reason" in headers  # type: ignore[operator]


def _seq_value(raw: str) -> int:
    text = raw.strip()
    return int(text) if text.isdigit() else 0


def _header(block: bytes, name: str) -> str | None:
    try:
        return parse_headers(block).get(name)
    except HeaderError:
        return None
