"""Streaming reads: what every Spark version's stream reader shares (driver and executor side).

`StreamReaderCore` is the driver's stream reader without the one call whose
shape depends on the Spark version, `latestOffset`: Spark 4.2+ passes the
batch's start and a read limit (`stream_reader.JetStreamStreamReader`, with
`SupportsTriggerAvailableNow`), 4.0 and 4.1 pass nothing
(`legacy_stream_reader.LegacyStreamReader`). Both compute the next offset
here (`_next_end`). Imports nothing of `pyspark.sql.streaming.datasource`
(missing before 4.2): the limits are plain numbers (`Limits`).

Driver side (this object lives in Spark's Python source runner on the driver;
it is pickled to executors only for `read`, without its connection):
- `initialOffset` is `{"streams": {}}`: no stream's start resolved yet, the
  same answer on every call (Spark asks more than once for batch 0, and again
  after a crash before its first offset is logged), without asking the server
  (a missing stream is reported when its start is resolved, naming the option).
- A configured stream missing from the batch's start offset has its start
  resolved once per reader (`_resolve`: the durable consumer's ack floor when
  `durable` names a consumer of this connector, else startingTimestamp /
  startingOffsets), and Spark's offset log records it before any message is
  read (how, per version: the two subclasses).
- The end of a batch (`_next_end`): each stream's last sequence, capped by the
  limits: maxMessagesPerTrigger / maxBytesPerTrigger (and the engine's
  ReadMaxRows / ReadMaxBytes on 4.2+) cap the range, shared by the streams in
  proportion to their backlogs and counted in matching messages when a
  subject filter is set (filtered.py); minMessagesPerTrigger holds the batch
  back until enough matching messages are there or maxTriggerDelay has
  passed. After `prepareForTriggerAvailableNow` (4.2+) the targets are pinned
  to the last sequences at that moment (and minMessagesPerTrigger no longer
  waits).
- data loss (start below the stream's first sequence, stream deleted, or its
  last sequence below the committed offset: deleted and re-created):
  `failOnDataLoss=true` fails naming the stream, the range and the option;
  false logs what is lost and skips ahead (a re-created stream is read from
  its beginning). Executors check again before reading (partitions.py).
- `commit(end)` mirrors `end` into the durable consumers (durable.py, best
  effort); so does `latestOffset` for the batch's start, which Spark only
  plans once the batch ending there is in the commit log (Spark calls
  `commit` for a batch only when it plans the next one, so AvailableNow's last
  batch needs this). With `durable`, offsets carry the query's identity
  (`owner`), which marks the consumers it moves.
- Checkpoints of the one-stream format are read as they are; the one case
  they miss a start (batch 0 logged by an older version, re-run now) starts
  where that version did (`startingOffsets` resolved again).
- `reportLatestOffset`: each stream's last sequence; the progress shows it as
  `latestOffset` next to `endOffset`, their difference is the lag (lag.py).
- Option `consumer` (an operator's pull consumer, read-only rights on it):
  the same calls go to `consumer_feed.ConsumerFeed` instead, and no stream
  info is ever asked for. The start is the consumer's ack floor; the end of a
  batch is the highest sequence the driver pulled for it (at most the limits,
  `BATCH_MESSAGES` / `BATCH_BYTES` by default, whatever Spark's read limit),
  and the offset records the batch's message count (`counts`) and the
  consumer's filter (`filter`: a later run refuses a consumer whose filter
  changed, before it reads or plans anything); partitions
  carry the messages (carried.py); `commit` acknowledges them; a replay whose
  messages do not all come back is data loss (failOnDataLoss); `stop` hands
  back what the driver held. minMessagesPerTrigger counts what the consumer
  has to deliver. No `reportLatestOffset` (the consumer's `num_pending` is
  the lag, on the server).
Executor side: `read(partition)` = `partitions.read_partition`, or
`carried.read_carried` for partitions that carry their messages.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from spark_jetstream.client import LeanConnection, NatsError, connect
from spark_jetstream.options import ReadOptions
from spark_jetstream.read.carried import CarriedPartition, carry, read_carried
from spark_jetstream.read.consumer_feed import BATCH_BYTES, BATCH_MESSAGES, ConsumerFeed
from spark_jetstream.read.durable import MirrorGuard, claim_durable, mirror_commit
from spark_jetstream.read.filtered import count_matching, nth_matching_seq
from spark_jetstream.read.offsets import (
    DataLossError,
    Offset,
    StreamMissingError,
    StreamState,
    cap_end,
    data_loss_message,
    resolve_start,
    split_budget,
    stream_state,
)
from spark_jetstream.read.partitions import SeqRangePartition, plan_partitions, read_partition
from spark_jetstream.shipping import Shipped

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """The read limit of one `latestOffset` call, as plain numbers (None: no such limit).

    `all_available`: the engine asked for everything (Spark's `ReadAllAvailable`):
    the configured limits do not apply.
    """

    max_rows: int | None = None
    max_bytes: int | None = None
    min_rows: int | None = None
    all_available: bool = False

    @classmethod
    def configured(cls, options: ReadOptions) -> Limits:
        """The limits the options set (maxMessagesPerTrigger, maxBytesPerTrigger, minMessagesPerTrigger)."""
        return cls(options.max_messages_per_trigger, options.max_bytes_per_trigger, options.min_messages_per_trigger)


class StreamReaderCore(Shipped, DataSourceStreamReader):
    def __init__(self, options: ReadOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self._clock = clock
        self._conn: LeanConnection | None = None
        self._targets: dict[str, int] | None = None
        self._latest: dict[str, int] = {}
        self._last_trigger = clock()
        self._lost_reported: set[tuple[str, int, int]] = set()
        self._mirrored: dict[str, int] = {}
        self._resolved: dict[str, int] = {}
        self._owner: str | None = None
        self._guard = MirrorGuard()
        self._feed = ConsumerFeed(options, self._call, clock=clock) if options.consumer else None
        self._counts: dict[int, int] = {}  # option consumer: message count of a planned batch, by its end
        self._pinned = False  # option consumer: Trigger.AvailableNow

    # -- pickling: executors get options only ------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_conn"] = None
        state["_clock"] = None
        state["_feed"] = None  # driver memory: executors get the messages in their partitions
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._clock is None:
            self._clock = time.monotonic

    # -- driver connection ----------------------------------------------------------
    def _call(self, fn: Callable[[LeanConnection], Any]) -> Any:
        """Run `fn` on the driver's connection, reconnecting once if it broke."""
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = connect(self.options.connection)
            try:
                return fn(self._conn)
            except (OSError, NatsError) as exc:
                if isinstance(exc, NatsError) and exc.__class__ is not NatsError:
                    raise  # API errors, timeouts: not a broken connection
                self._close()
                if attempt == 2:
                    raise
                log.info("driver connection lost (%s); reconnecting", exc)
        raise AssertionError("unreachable")

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _state(self, stream: str) -> StreamState | None:
        try:
            return self._call(lambda c: stream_state(c, stream))  # type: ignore[no-any-return]
        except StreamMissingError as exc:
            self._loss(stream, f"data loss on stream {stream!r}: {exc} (deleted?); messages not yet read are gone")
            return None

    def _loss(self, stream: str, message: str, key: tuple[int, int] = (0, 0)) -> None:
        """Apply failOnDataLoss to `message` (without the advice, which is added here)."""
        if self.options.fail_on_data_loss:
            raise DataLossError(f"{message}; set option failOnDataLoss=false to keep the query running without them")
        if (stream, *key) not in self._lost_reported:
            self._lost_reported.add((stream, *key))
            log.warning("%s; skipping", message)

    def _owner_of(self, offset: Offset) -> str | None:
        """The query's identity (durable only): from the checkpoint, else made once here."""
        if not self.options.durable:
            return None
        if offset.owner:
            self._owner = offset.owner
        elif self._owner is None:
            self._owner = secrets.token_hex(8)
        return self._owner

    # -- offsets ----------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        # No server call: the same answer every time; the start is resolved by latestOffset.
        return Offset().to_dict()

    def _resolve(self, stream: str, owner: str | None) -> int:
        """Where the query starts on `stream`: resolved once per reader, then recorded by Spark."""
        if stream in self._resolved:
            return self._resolved[stream]
        if self._feed is not None:
            self._resolved[stream] = self._feed.start()
            return self._resolved[stream]
        opts = self.options
        try:
            state = self._call(lambda c: stream_state(c, stream))
        except StreamMissingError as exc:
            raise StreamMissingError(f"{exc} (option stream)") from None
        durable = opts.durable
        if durable and owner:
            seq = self._call(
                lambda c: claim_durable(
                    c, stream, durable, opts.subjects, owner, lambda: resolve_start(c, opts, state), state.retention
                )
            )
        else:
            seq = self._call(lambda c: resolve_start(c, opts, state))
        self._resolved[stream] = int(seq)
        log.info("stream %s: the query starts after sequence %d", stream, seq)
        return int(seq)

    def _pin_targets(self) -> None:
        """Trigger.AvailableNow: read up to each stream's last sequence now, no further."""
        if self._feed is not None:
            self._feed.pin()
            self._pinned = True
            return
        self._targets = {}
        for stream in self.options.streams:
            state = self._state(stream)
            self._targets[stream] = state.last_seq if state is not None else 0
        log.info("Trigger.AvailableNow: reading up to sequences %s", self._targets)

    def _skip_lost(self, stream: str, start: int, end: int, state: StreamState) -> int:
        """Apply the data-loss policy to (start, end]; return the effective start."""
        if start + 1 >= state.first_seq or end <= start:
            return start
        lost_hi = min(end, state.first_seq - 1)
        message = data_loss_message(stream, start + 1, lost_hi, "purged, expired or removed by retention")
        if self.options.fail_on_data_loss:
            raise DataLossError(message)
        if (stream, start, lost_hi) not in self._lost_reported:
            self._lost_reported.add((stream, start, lost_hi))
            log.warning("skipping %d sequences: %s", lost_hi - start, message)
        return lost_hi

    def _recreated(self, stream: str, begin: int, state: StreamState) -> int:
        """The stream's last sequence is below the committed offset: data loss; restart from 0."""
        self._loss(
            stream,
            f"data loss on stream {stream!r}: its last sequence {state.last_seq} is below the committed "
            f"offset {begin} (deleted and re-created?); what it held after {state.last_seq} is gone",
            (begin, -1),
        )
        return 0

    def _next_end(self, given: Offset, positions: dict[str, int], limits: Limits, owner: str | None) -> dict[str, int]:
        """Each stream's end of the next batch from `positions` (its start, every configured
        stream present), under `limits`; `positions` itself when minMessagesPerTrigger holds it
        back. `positions` are committed: mirrored into the durable consumers first."""
        if self._feed is not None:
            return self._feed_end(self._feed, positions, limits)
        states: dict[str, StreamState] = {}
        for stream in self.options.streams:
            state = self._state(stream)
            if state is not None:
                states[stream] = state
                # Spark plans batch N+1 only after batch N is in the commit log, so
                # the start is committed: mirror it now (see the module doc); not into a
                # stream re-created below it.
                if state.last_seq >= positions[stream]:
                    self._mirror(stream, positions[stream], state, owner, adopt=given.owner is None)
        self._latest = {s: st.last_seq for s, st in states.items()}
        eff: dict[str, int] = {}
        targets: dict[str, int] = {}
        for stream, state in states.items():
            begin = positions[stream]
            if state.last_seq < begin:
                begin = self._recreated(stream, begin, state)
            target = state.last_seq
            if self._targets is not None:
                target = min(self._targets.get(stream, target), target)
            e = self._skip_lost(stream, begin, target, state) if target > begin else begin
            eff[stream], targets[stream] = e, max(e, target)
        ends = self._capped(eff, targets, states, limits)
        if ends is None:
            return dict(positions)
        if any(ends[s] > eff[s] for s in ends):
            self._last_trigger = self._clock()
        return {**positions, **ends}

    def _capped(
        self, eff: dict[str, int], targets: dict[str, int], states: dict[str, StreamState], limits: Limits
    ) -> dict[str, int] | None:
        """Each stream's batch end under the read limit; None: hold the batch back (minMessages)."""
        opts = self.options
        if limits.all_available:
            return dict(targets)
        max_rows = _min_of(opts.max_messages_per_trigger, limits.max_rows)
        max_bytes = _min_of(opts.max_bytes_per_trigger, limits.max_bytes)
        min_rows = limits.min_rows if limits.min_rows is not None else opts.min_messages_per_trigger
        if min_rows is not None and self._targets is None and not self._min_rows_ready(eff, targets, min_rows):
            return None
        backlog = {s: targets[s] - eff[s] for s in eff}
        budgets: dict[str, int | None] = {s: None for s in eff}
        if max_rows is not None:
            budgets = dict(split_budget(max_rows, backlog))
        if max_bytes is not None:
            in_bytes = split_budget(max_bytes, {s: backlog[s] * states[s].avg_msg_bytes for s in eff})
            for s in eff:
                fits = max(1, in_bytes[s] // states[s].avg_msg_bytes) if in_bytes[s] else 0
                cap = budgets[s]
                budgets[s] = fits if cap is None else min(fits, cap)
        ends: dict[str, int] = {}
        for s in eff:
            n = budgets[s]
            if n is None or targets[s] <= eff[s]:
                ends[s] = targets[s]
            elif opts.subjects and opts.read_mode != "direct":  # readMode=direct: no probe consumer
                nth = partial(nth_matching_seq, stream=s, filters=opts.subjects, start=eff[s], n=n, target=targets[s])
                ends[s] = int(self._call(nth))
            else:
                ends[s] = cap_end(eff[s], targets[s], max_messages=n, max_bytes=None, avg_msg_bytes=1)
        return ends

    def _min_rows_ready(self, eff: dict[str, int], targets: dict[str, int], min_rows: int) -> bool:
        waited = self._clock() - self._last_trigger
        if waited >= self.options.max_trigger_delay_s:
            return True
        available = 0
        for s in eff:
            if targets[s] > eff[s]:
                count = partial(count_pending, options=self.options, start=eff[s], target=targets[s], stream=s)
                available += int(self._call(count))
        if available >= min_rows:
            return True
        log.debug("%d of %d messages available after %.1fs: waiting", available, min_rows, waited)
        return False

    def _feed_end(self, feed: ConsumerFeed, positions: dict[str, int], limits: Limits) -> dict[str, int]:
        """Option consumer: the end of the next batch, pulled by the driver (see the module doc)."""
        opts = self.options
        stream = opts.stream
        start = positions[stream]
        max_rows = max_bytes = None
        if not limits.all_available:
            max_rows = _min_of(opts.max_messages_per_trigger, limits.max_rows)
            max_bytes = _min_of(opts.max_bytes_per_trigger, limits.max_bytes)
        min_rows = limits.min_rows if limits.min_rows is not None else opts.min_messages_per_trigger
        if min_rows is not None and not self._pinned and not limits.all_available:
            waited = self._clock() - self._last_trigger
            available = feed.available(start)
            if waited < opts.max_trigger_delay_s and available < min_rows:
                log.debug("%d of %d messages available after %.1fs: waiting", available, min_rows, waited)
                return dict(positions)
        end, count = feed.plan(start, max_rows or BATCH_MESSAGES, max_bytes or BATCH_BYTES)
        if end == start:
            return dict(positions)
        self._last_trigger = self._clock()
        self._counts[end] = count
        return {**positions, stream: end}

    def _offset(self, ends: dict[str, int], owner: str | None, starts: dict[str, int], given: Offset) -> dict[str, Any]:
        """The offset of `ends` (option consumer: with each batch's message count; a position that
        did not move keeps its count, so the offset's JSON stays the same)."""
        counts: dict[str, int] = {}
        filters: tuple[str, ...] | None = None
        if self._feed is not None:
            self._feed.check_filter(given.filters)
            filters = self._feed.settings.filters
            for stream, end in ends.items():
                kept = given.count_of(stream) if given.get(stream) == end else self._counts.get(end)
                if kept is not None:
                    counts[stream] = kept
        return Offset.of(ends, owner, starts, counts, filters).to_dict()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        if not self._latest:
            return None
        return Offset.of(self._latest).to_dict()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        opts = self.options
        lo_off = Offset.from_dict(start, opts.streams)
        hi_off = Offset.from_dict(end, opts.streams)
        parts: list[InputPartition] = []
        old_first_batch = not lo_off.seqs and "streams" not in _as_dict(end)
        for stream, hi in hi_off.seqs:
            lo = lo_off.get(stream)
            if lo is None:
                lo = hi_off.start_of(stream)  # the pre-4.2 path records where the query starts
            if old_first_batch and stream in opts.streams:
                # batch 0 of a checkpoint written before the start was recorded (its end in the
                # one-stream format, its start never logged): the start as that version computed it
                lo = min(hi, int(self._call(partial(_old_start, options=opts, stream=stream))))
            if stream not in opts.streams or lo is None or hi == lo:
                continue  # not read, or the batch that records where the query starts
            if self._feed is not None:
                self._feed.check_filter(hi_off.filters)
                parts += self._carried(self._feed, lo, hi, hi_off.count_of(stream), len(parts))
                continue
            if hi < lo:
                lo = 0  # the stream was re-created (failOnDataLoss=false): read it from its start
            state = self._state(stream)
            if state is None:
                continue
            lo = self._skip_lost(stream, lo, hi, state)
            parts += plan_partitions(
                stream,
                lo,
                hi,
                subjects=opts.subjects,
                min_partitions=opts.min_partitions,
                max_per_partition=opts.max_messages_per_partition,
                avg_msg_bytes=state.avg_msg_bytes,
                first_index=len(parts),
                fail_on_data_loss=opts.fail_on_data_loss,
                direct=opts.read_mode == "direct",
            )
        return parts

    def _carried(self, feed: ConsumerFeed, lo: int, hi: int, count: int | None, first: int) -> list[CarriedPartition]:
        """Option consumer: the messages of (lo, hi] (pulled again after a restart) as partitions."""
        opts = self.options
        msgs = feed.batch(lo, hi, count)
        if count is not None and len(msgs) < count:
            self._loss(
                feed.stream,
                f"data loss on stream {feed.stream!r} read through consumer {feed.consumer!r}: the micro-batch "
                f"({lo}, {hi}] held {count} messages and {len(msgs)} of them came back after the restart (the "
                "stream removed the others meanwhile: purged, aged out or deleted)",
                (lo, hi),
            )
        return carry(feed.stream, lo, hi, msgs, with_headers=opts.include_headers, min_partitions=opts.min_partitions,
                     max_per_partition=opts.max_messages_per_partition, first_index=first)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, CarriedPartition):
            yield from read_carried(partition, self.options.include_headers)
            return
        assert isinstance(partition, SeqRangePartition)
        yield from read_partition(self.options.connection, partition, self.options.include_headers)

    def commit(self, end: dict[str, Any]) -> None:
        if self._feed is not None:
            committed = Offset.from_dict(end, self.options.streams).get(self._feed.stream)
            if committed is not None:
                self._feed.commit(committed)
            return
        if not self.options.durable:
            return
        offset = Offset.from_dict(end, self.options.streams)
        owner = self._owner_of(offset)
        for stream, seq in offset.seqs:
            if stream not in self.options.streams or seq == self._mirrored.get(stream):
                continue
            state = self._state(stream)
            if state is not None:
                self._mirror(stream, seq, state, owner, adopt=offset.owner is None)

    def _mirror(self, stream: str, seq: int, state: StreamState, owner: str | None, *, adopt: bool) -> None:
        """Move the durable's ack floor to the committed `seq` (once per offset, best effort)."""
        opts = self.options
        durable = opts.durable
        if not durable or not owner or seq == self._mirrored.get(stream):
            return

        def mirror(c: LeanConnection) -> Any:
            return mirror_commit(
                c, stream, durable, opts.subjects, seq, owner=owner, retention=state.retention,
                first_seq=state.first_seq, adopt=adopt,
            )

        version = ""
        if self._conn is not None and self._conn.info is not None:
            version = str(self._conn.info.raw.get("version", ""))
        if self._guard.run(f"durable {durable!r} on stream {stream!r}", version, lambda: self._call(mirror)):
            self._mirrored[stream] = seq

    def stop(self) -> None:
        if self._feed is not None:
            self._feed.release()
        self._close()


def _old_start(conn: LeanConnection, options: ReadOptions, stream: str) -> int:
    return resolve_start(conn, options, stream_state(conn, stream))


def _min_of(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _as_dict(value: dict[str, Any] | str) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else value


def count_pending(conn: LeanConnection, options: ReadOptions, start: int, target: int, stream: str) -> int:
    """Matching messages in (start, target] of `stream` (with a filter: asks the server).

    The server counts up to the stream's end, which may be past target: an upper
    bound that is exact when target is the last sequence (the usual case).
    """
    if not options.subjects or options.read_mode == "direct":
        return target - start  # an upper bound: readMode=direct makes no counting consumer
    return count_matching(conn, stream, options.subjects, start, target)
