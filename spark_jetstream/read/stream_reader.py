"""Streaming reads: `spark.readStream.format("jetstream")` (micro-batch).

Driver side (this object lives in Spark's Python source runner on the driver;
it is pickled to executors only for `read`, without its connection):
- `initialOffset`: the durable consumer's ack floor when `durable` names an
  existing consumer, else `startingTimestamp` / `startingOffsets`. (A query
  restarted on its checkpoint never calls it: Spark resumes from there.)
- `latestOffset(start, limit)`: the stream's last sequence, capped by the read
  limit: `ReadAllAvailable` ignores the configured limits; otherwise
  maxMessagesPerTrigger / maxBytesPerTrigger (and the engine's ReadMaxRows /
  ReadMaxBytes) cap the range, and minMessagesPerTrigger holds the batch back
  until enough matching messages are there or maxTriggerDelay has passed.
  After `prepareForTriggerAvailableNow` the target is pinned to the last
  sequence at that moment (and minMessagesPerTrigger no longer waits).
- data loss (start below the stream's first sequence, or stream deleted):
  `failOnDataLoss=true` fails naming the stream, the range and the option;
  false logs what is lost and skips ahead.
- `commit(end)` mirrors `end` into the durable consumer (durable.py); so does
  `latestOffset(start, ...)` for `start`, which Spark only passes once the
  batch ending there is in the commit log (Spark calls `commit` for a batch
  only when it plans the next one, so AvailableNow's last batch needs this).
Executor side: `read(partition)` = `partitions.read_partition`.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from spark_jetstream.client import LeanConnection, NatsError, connect
from spark_jetstream.options import ReadOptions
from spark_jetstream.read.durable import durable_ack_floor, ensure_durable, mirror_commit
from spark_jetstream.read.offsets import (
    DataLossError,
    Offset,
    StreamMissingError,
    StreamState,
    cap_end,
    data_loss_message,
    resolve_start,
    stream_state,
)
from spark_jetstream.read.partitions import SeqRangePartition, plan_partitions, read_partition

log = logging.getLogger(__name__)


class JetStreamStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self._clock = clock
        self._conn: LeanConnection | None = None
        self._target: int | None = None
        self._latest: int | None = None
        self._last_trigger = clock()
        self._lost_reported: set[tuple[int, int]] = set()
        self._mirrored: int | None = None

    # -- pickling: executors get options only ------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_conn"] = None
        state["_clock"] = None
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

    def _state(self) -> StreamState | None:
        try:
            return self._call(lambda c: stream_state(c, self.options.stream))  # type: ignore[no-any-return]
        except StreamMissingError as exc:
            self._stream_missing(str(exc))
            return None

    def _stream_missing(self, why: str) -> None:
        message = (
            f"data loss on stream {self.options.stream!r}: {why} (deleted?); messages not yet read are gone; "
            "set option failOnDataLoss=false to keep the query running without them"
        )
        if self.options.fail_on_data_loss:
            raise DataLossError(message)
        log.warning("%s", message)
        return None

    # -- offsets ----------------------------------------------------------------------
    def initialOffset(self) -> dict:
        opts = self.options
        try:
            state = self._call(lambda c: stream_state(c, opts.stream))
        except StreamMissingError as exc:
            # a new query on a stream that does not exist: a mistake, not data loss
            raise StreamMissingError(f"{exc} (option stream)") from None
        durable = opts.durable
        if durable:
            floor = self._call(lambda c: durable_ack_floor(c, opts.stream, durable))
            if floor is not None:
                log.info("starting after the ack floor %d of durable %s", floor, opts.durable)
                return Offset(opts.stream, floor).to_dict()
        start = self._call(lambda c: resolve_start(c, opts, state))
        if durable:
            self._call(lambda c: ensure_durable(c, opts.stream, durable, opts.subjects, start))
        return Offset(opts.stream, start).to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        opts = self.options
        if opts.max_messages_per_trigger is not None:
            return ReadMaxRows(opts.max_messages_per_trigger)
        if opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(opts.max_bytes_per_trigger)
        if opts.min_messages_per_trigger is not None:
            return ReadMinRows(opts.min_messages_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        state = self._state()
        self._target = state.last_seq if state is not None else 0
        log.info("Trigger.AvailableNow: reading up to sequence %d of %s", self._target, self.options.stream)

    def _skip_lost(self, start: int, end: int, state: StreamState) -> int:
        """Apply the data-loss policy to (start, end]; return the effective start."""
        if start + 1 >= state.first_seq or end <= start:
            return start
        lost_hi = min(end, state.first_seq - 1)
        message = data_loss_message(
            self.options.stream, start + 1, lost_hi, "purged, expired or removed by retention"
        )
        if self.options.fail_on_data_loss:
            raise DataLossError(message)
        if (start, lost_hi) not in self._lost_reported:
            self._lost_reported.add((start, lost_hi))
            log.warning("skipping %d sequences: %s", lost_hi - start, message)
        return lost_hi

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        opts = self.options
        begin = Offset.from_dict(start, opts.stream).seq
        state = self._state()
        if state is None:
            return Offset(opts.stream, begin).to_dict()
        # Spark plans batch N+1 only after batch N is in the commit log, so `start`
        # is committed: mirror it now. (Spark calls commit() for a batch only when
        # it constructs the next one; with AvailableNow the last batch would never
        # be mirrored otherwise.)
        self._mirror(begin, state)
        self._latest = state.last_seq
        target = state.last_seq if self._target is None else min(self._target, state.last_seq)
        if target <= begin:
            return Offset(opts.stream, begin).to_dict()
        eff = self._skip_lost(begin, target, state)
        if isinstance(limit, ReadAllAvailable):
            end = target
        else:
            max_rows = opts.max_messages_per_trigger
            max_bytes = opts.max_bytes_per_trigger
            min_rows = opts.min_messages_per_trigger
            if isinstance(limit, ReadMaxRows):
                max_rows = limit.max_rows if max_rows is None else min(max_rows, limit.max_rows)
            elif isinstance(limit, ReadMaxBytes):
                max_bytes = limit.max_bytes if max_bytes is None else min(max_bytes, limit.max_bytes)
            elif isinstance(limit, ReadMinRows):
                min_rows = limit.min_rows
            if min_rows is not None and self._target is None and not self._min_rows_ready(eff, target, min_rows):
                return Offset(opts.stream, begin).to_dict()
            end = cap_end(eff, target, max_messages=max_rows, max_bytes=max_bytes, avg_msg_bytes=state.avg_msg_bytes)
        if end > eff:
            self._last_trigger = self._clock()
        return Offset(opts.stream, max(end, eff)).to_dict()

    def _min_rows_ready(self, start: int, target: int, min_rows: int) -> bool:
        waited = self._clock() - self._last_trigger
        if waited >= self.options.max_trigger_delay_s:
            return True
        available = self._call(lambda c: count_pending(c, self.options, start, target))
        if available >= min_rows:
            return True
        log.debug("%d of %d messages available after %.1fs: waiting", available, min_rows, waited)
        return False

    def reportLatestOffset(self) -> dict | None:
        if self._latest is None:
            return None
        return Offset(self.options.stream, self._latest).to_dict()

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        opts = self.options
        lo = Offset.from_dict(start, opts.stream).seq
        hi = Offset.from_dict(end, opts.stream).seq
        if hi <= lo:
            return []
        state = self._state()
        if state is None:
            return []
        lo = self._skip_lost(lo, hi, state)
        return plan_partitions(
            opts.stream,
            lo,
            hi,
            subjects=opts.subjects,
            min_partitions=opts.min_partitions,
            max_per_partition=opts.max_messages_per_partition,
            avg_msg_bytes=state.avg_msg_bytes,
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SeqRangePartition)
        yield from read_partition(self.options.connection, partition, self.options.include_headers)

    def commit(self, end: dict) -> None:
        if not self.options.durable:
            return
        seq = Offset.from_dict(end, self.options.stream).seq
        if seq == self._mirrored:
            return
        state = self._state()
        if state is not None:
            self._mirror(seq, state)

    def _mirror(self, seq: int, state: StreamState) -> None:
        """Move the durable's ack floor to the committed `seq` (once per offset)."""
        opts = self.options
        durable = opts.durable
        if not durable or seq == self._mirrored:
            return
        self._call(lambda c: mirror_commit(c, opts.stream, durable, opts.subjects, seq, state.retention))
        self._mirrored = seq

    def stop(self) -> None:
        self._close()


def count_pending(conn: LeanConnection, options: ReadOptions, start: int, target: int) -> int:
    """Matching messages in (start, target] (exact with a filter: asks the server)."""
    if not options.subjects:
        return target - start
    name = "sjc_" + secrets.token_hex(8)
    config: dict[str, Any] = {
        "name": name,
        "deliver_policy": "by_start_sequence",
        "opt_start_seq": start + 1,
        "ack_policy": "none",
        "mem_storage": True,
        "inactive_threshold": 10_000_000_000,
        "num_replicas": 1,
    }
    if len(options.subjects) == 1:
        config["filter_subject"] = options.subjects[0]
    else:
        config["filter_subjects"] = list(options.subjects)
    created = conn.js_api(
        f"CONSUMER.CREATE.{options.stream}.{name}",
        {"stream_name": options.stream, "config": config, "action": "create"},
    )
    conn.js_api(f"CONSUMER.DELETE.{options.stream}.{name}")
    # num_pending counts up to the stream's end, which may be past target: an upper bound
    # that is exact when target is the last sequence (the usual case)
    return int(created.get("num_pending", 0))
