"""Streaming reads on Spark 4.2+: `latestOffset(start, limit)`, read limits, `Trigger.AvailableNow`.

The stream reader Spark 4.2 and later drive (`pyspark.sql.streaming.datasource`,
imported here only: the data source imports this module only when that API
exists, see spark_features.py). What all versions share is in stream_core.py.

- `latestOffset(start, limit)`: a configured stream missing from `start` has
  its start resolved once, and the answer is `start` plus those starts: a
  batch that reads nothing by construction, so Spark's offset log records the
  resolved start before any message is read (as Spark's Kafka source keeps its
  initial offsets). Otherwise each stream's last sequence, capped by the read
  limit: `ReadAllAvailable` ignores the configured limits; the engine's
  `ReadMaxRows` / `ReadMaxBytes` tighten the configured ones; `ReadMinRows`
  replaces minMessagesPerTrigger.
- `getDefaultReadLimit`: from maxMessagesPerTrigger, maxBytesPerTrigger,
  minMessagesPerTrigger (in that order), else `ReadAllAvailable`.
- `prepareForTriggerAvailableNow`: pins each stream's target to its last
  sequence at that moment.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from spark_jetstream.read.offsets import Offset
from spark_jetstream.read.stream_core import Limits, StreamReaderCore


def limits_of(limit: ReadLimit) -> Limits:
    """Spark's read limit as plain numbers (a limit this connector does not know: none)."""
    if isinstance(limit, ReadAllAvailable):
        return Limits(all_available=True)
    if isinstance(limit, ReadMaxRows):
        return Limits(max_rows=limit.max_rows)
    if isinstance(limit, ReadMaxBytes):
        return Limits(max_bytes=limit.max_bytes)
    if isinstance(limit, ReadMinRows):
        return Limits(min_rows=limit.min_rows)
    return Limits()


class JetStreamStreamReader(StreamReaderCore, SupportsTriggerAvailableNow):
    """The stream reader of Spark 4.2+ (admission control, AvailableNow)."""

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
        self._pin_targets()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        opts = self.options
        given = Offset.from_dict(start, opts.streams)
        owner = self._owner_of(given)
        positions = {s: seq for s, seq in given.seqs if s in opts.streams}
        missing = [s for s in opts.streams if s not in positions]
        if missing:
            for stream in missing:
                positions[stream] = self._resolve(stream, owner)
            return self._offset(positions, owner, dict(given.starts), given)
        ends = self._next_end(given, positions, limits_of(limit), owner)
        return self._offset(ends, owner, dict(given.starts), given)
