"""Read options of the `jetstream` source, parsed into a frozen dataclass.

The options themselves (names, kinds, defaults, where they apply, help) are
declared in `table.py`; `ReadOptions.from_options` parses them for a batch or
a streaming read and adds the rules that join several options. Everything is
validated on the driver before any query runs: an unknown option or a bad
value raises `OptionError` whose message names the option. The result is
picklable and holds no connection.

Offsets are stream sequences. `startingOffsets=N` means "the first message
read is the first at or after sequence N"; `endingOffsets=N` (batch) means
"the last message read is at or before sequence N" (both inclusive).
`stream` may name several streams (comma-separated): one source, one offset
per stream. Spark's Kafka names `maxOffsetsPerTrigger` / `minOffsetsPerTrigger`
/ `maxRecordsPerPartition` mean the same as maxMessagesPerTrigger /
minMessagesPerTrigger / maxMessagesPerPartition.

Timestamps are milliseconds since the epoch or an ISO-8601 time (UTC if no
zone is given).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from spark_jetstream.options.connection import ConnectionOptions
from spark_jetstream.options.grammar import NS_PER_S, OptionError
from spark_jetstream.options.table import Scope, lower_keys, parse_options

__all__ = ["REMOVED", "ReadOptions"]

# Options that once claimed to be Spark's names (they are not): named in the error.
REMOVED: Final = {
    "maxRecordsPerBatch": "maxMessagesPerTrigger (or Spark's Kafka name maxOffsetsPerTrigger)",
    "maxBytesPerBatch": "maxBytesPerTrigger",
}


@dataclass(frozen=True)
class ReadOptions:
    """Validated read options (driver and executors)."""

    connection: ConnectionOptions
    streams: tuple[str, ...]
    subjects: tuple[str, ...] = ()
    durable: str | None = None
    starting_offsets: str | int = "earliest"
    starting_timestamp_ms: int | None = None
    timestamp_strategy: str = "error"
    ending_offsets: str | int = "latest"
    ending_timestamp_ms: int | None = None
    max_messages_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    min_messages_per_trigger: int | None = None
    max_trigger_delay_s: float = 900.0
    min_partitions: int | None = None  # None: split by size (read/partitions.py)
    max_messages_per_partition: int = 500_000
    fail_on_data_loss: bool = True
    include_headers: bool = True
    read_mode: str = "consumer"  # or "direct": no consumer (read/direct_get.py)

    @property
    def stream(self) -> str:
        """The first stream (the only one of most queries)."""
        return self.streams[0]

    @classmethod
    def from_options(
        cls, options: Mapping[str, Any], *, streaming: bool, spark: tuple[tuple[int, int], str] | None = None
    ) -> ReadOptions:
        """`spark`: the running Spark's API level and version; options it cannot honour are refused."""
        for key, instead in REMOVED.items():
            if key.lower() in lower_keys(options):
                raise OptionError(f"option {key} was removed (it is not Spark's name for this): use {instead}")
        v = parse_options(options, Scope.STREAM_READ if streaming else Scope.BATCH_READ, spark=spark)
        given = v.given
        if not v["stream"]:
            raise OptionError("option stream is required (the JetStream stream to read)")
        if "startingOffsets" in given and "startingTimestamp" in given:
            raise OptionError("options startingOffsets and startingTimestamp exclude each other: give one")
        starting, ending = v["startingOffsets"], None
        ending_ts = None
        if not streaming:
            ending, ending_ts = v["endingOffsets"], v["endingTimestamp"]
            if "endingOffsets" in given and "endingTimestamp" in given:
                raise OptionError("options endingOffsets and endingTimestamp exclude each other: give one")
            if isinstance(starting, int) and isinstance(ending, int) and ending < starting:
                raise OptionError(f"option endingOffsets ({ending}) is before startingOffsets ({starting})")
            starting_ts = v["startingTimestamp"]
            if starting_ts is not None and ending_ts is not None and ending_ts < starting_ts:
                raise OptionError("option endingTimestamp is before startingTimestamp")

        max_msgs = max_bytes = min_msgs = None
        delay_s = 900.0
        if streaming:
            max_msgs = _min_of(v["maxMessagesPerTrigger"], v["maxOffsetsPerTrigger"])
            max_bytes = v["maxBytesPerTrigger"]
            if "minMessagesPerTrigger" in given and "minOffsetsPerTrigger" in given:
                raise OptionError("options minMessagesPerTrigger and minOffsetsPerTrigger exclude each other: give one")
            min_msgs = _min_of(v["minMessagesPerTrigger"], v["minOffsetsPerTrigger"])
            if min_msgs is not None and max_msgs is not None and min_msgs > max_msgs:
                raise OptionError(
                    f"option minMessagesPerTrigger ({min_msgs}) is larger than maxMessagesPerTrigger ({max_msgs})"
                )
            if "maxTriggerDelay" in given and min_msgs is None:
                raise OptionError("option maxTriggerDelay needs minMessagesPerTrigger")
            delay_s = v["maxTriggerDelay"] / NS_PER_S

        if v["readMode"] == "direct" and streaming and v["durable"] is not None:
            raise OptionError(
                "options readMode=direct and durable exclude each other: durable creates and moves a "
                "consumer, readMode=direct reads without any"
            )
        return cls(
            connection=ConnectionOptions.from_parsed(v),
            streams=v["stream"],
            subjects=v["subjects"],
            durable=v["durable"] if streaming else None,
            starting_offsets=starting,
            starting_timestamp_ms=v["startingTimestamp"],
            timestamp_strategy=v["startingOffsetsByTimestampStrategy"],
            ending_offsets="latest" if ending is None else ending,
            ending_timestamp_ms=ending_ts,
            max_messages_per_trigger=max_msgs,
            max_bytes_per_trigger=max_bytes,
            min_messages_per_trigger=min_msgs,
            max_trigger_delay_s=delay_s,
            min_partitions=v["minPartitions"],
            max_messages_per_partition=_per_partition(v["maxMessagesPerPartition"], v["maxRecordsPerPartition"], given),
            fail_on_data_loss=v["failOnDataLoss"],
            include_headers=v["includeHeaders"],
            read_mode=v["readMode"],
        )


def _min_of(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _per_partition(messages: int, records: int | None, given: frozenset[str]) -> int:
    """maxMessagesPerPartition, or Spark's Kafka name for it (the smaller when both are given)."""
    if records is None:
        return messages
    return min(messages, records) if "maxMessagesPerPartition" in given else records
