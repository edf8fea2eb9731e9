"""Streaming reads on Spark 4.0 and 4.1: `latestOffset()` without arguments.

Before 4.2, Spark's Python stream reader has no read limits and no
`SupportsTriggerAvailableNow`, and `latestOffset()` is told neither the
batch's start nor a limit. Spark then runs `Trigger.AvailableNow` as ONE
micro-batch, like `Trigger.Once` (its fallback for sources without
AvailableNow; `spark.sql.streaming.triggerAvailableNowWrapper.enabled` would
wrap the source instead, pinning one `latestOffset()` for the run): one
`latestOffset()` per run, and a checkpoint whose last batch did not commit
gets that batch only (the next run reads the rest). What this reader does
(the order of calls below was observed on pyspark 4.0.5 and 4.1.4, and is
what tests/connector/integration/test_legacy_stream_reader.py drives):

- Where the query is: the last offset Spark handed to `partitions(start,
  end)` (its `end`). After a restart Spark hands the checkpoint's last offset
  as `partitions(X, X)` before anything else (`setLatestSeenOffset`), and it
  runs a logged but uncommitted batch again before it asks `latestOffset()`,
  so when `latestOffset()` is called that offset is committed (mirrored into
  the durable consumers, as the 4.2 path does with `start`).
- The start: a stream with no position yet has its start resolved once per
  reader (stream_core.py) and the offset records it, `"starts": {S: N}`
  (offsets.py), so the first batch reads (N, end] and a re-run of that batch
  after a crash reads the same range: the start is in Spark's offset log
  before anything is read, without the empty first batch of the 4.2 path
  (which `availableNow` would end on, having read nothing). `starts` stays in
  every later offset.
- The end: each stream's last sequence (the configured per-trigger limits
  need Spark 4.2: the data source refuses them before a query starts, naming
  the option and the version, rather than let `availableNow` stop after one
  capped batch).
- One warning per query (the first `latestOffset`) names what this Spark
  version cannot do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql.datasource import InputPartition

from spark_jetstream.options import ReadOptions
from spark_jetstream.read.consumer_feed import BATCH_BYTES, BATCH_MESSAGES
from spark_jetstream.read.offsets import Offset
from spark_jetstream.read.stream_core import Limits, StreamReaderCore

log = logging.getLogger(__name__)

MISSING_BEFORE_4_2 = (
    "read limits (maxMessagesPerTrigger, maxOffsetsPerTrigger, maxBytesPerTrigger, "
    "minMessagesPerTrigger, minOffsetsPerTrigger, maxTriggerDelay need Spark 4.2+); "
    "Trigger.AvailableNow is one micro-batch of everything available at its start (after a crash, a run "
    "finishes the interrupted micro-batch only: run it again for the rest); "
    "with durable, the consumer mirrors an AvailableNow run's last batch when the next run starts"
)

CONSUMER_BEFORE_4_2 = (
    "; with option consumer, an AvailableNow run reads one micro-batch of at most "
    f"{BATCH_MESSAGES} messages and {BATCH_BYTES // 2**20} MiB (and the consumer's max_ack_pending): "
    "run it again for the rest"
)


class LegacyStreamReader(StreamReaderCore):
    """The stream reader of Spark 4.0 and 4.1 (no admission control)."""

    def __init__(
        self, options: ReadOptions, clock: Callable[[], float] = time.monotonic, spark_version: str = ""
    ) -> None:
        super().__init__(options, clock)
        self.spark_version = spark_version
        self._seen: Offset | None = None
        self._warned = False

    def latestOffset(self) -> dict[str, Any]:  # type: ignore[override]
        if not self._warned:
            self._warned = True
            log.warning("jetstream source on Spark %s: no %s%s", self.spark_version or "< 4.2", MISSING_BEFORE_4_2,
                        CONSUMER_BEFORE_4_2 if self.options.consumer else "")
        opts = self.options
        given = self._seen or Offset()
        owner = self._owner_of(given)
        positions = {s: seq for s, seq in given.seqs if s in opts.streams}
        starts = dict(given.starts)
        for stream in opts.streams:
            if stream not in positions:
                positions[stream] = starts[stream] = self._resolve(stream, owner)
        ends = self._next_end(given, positions, Limits.configured(opts), owner)
        return self._offset(ends, owner, starts, given)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        self._seen = Offset.from_dict(end, self.options.streams)
        return super().partitions(start, end)
