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

Option `consumer` (reading through an operator's pull consumer) takes one
stream and excludes the options the consumer makes meaningless: where to
start (the consumer decides), `durable`, `readMode`, `filterPushdown`.

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
    consumer: str | None = None  # an operator's pull consumer to read through (read/consumer_feed.py)
    starting_offsets: str | int = "earliest"
    starting_timestamp_ms: int | None = None
    starting_by_stream: tuple[tuple[str, str | int], ...] = ()  # startingOffsets as JSON
    starting_ts_by_stream: tuple[tuple[str, int], ...] = ()  # startingOffsetsByTimestamp
    timestamp_strategy: str = "error"
    ending_offsets: str | int = "latest"
    ending_timestamp_ms: int | None = None
    ending_by_stream: tuple[tuple[str, str | int], ...] = ()  # endingOffsets as JSON
    max_messages_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    min_messages_per_trigger: int | None = None
    max_trigger_delay_s: float = 900.0
    min_partitions: int | None = None  # None: split by size (read/partitions.py)
    max_messages_per_partition: int = 500_000
    fail_on_data_loss: bool = True
    include_headers: bool = True
    read_mode: str = "consumer"  # or "direct": no consumer (read/direct_get.py)
    filter_pushdown: bool = False  # batch reads: pushFilters (read/pushdown.py)

    @property
    def stream(self) -> str:
        """The first stream (the only one of most queries)."""
        return self.streams[0]

    def start_timestamp_ms(self, stream: str) -> int | None:
        """Where `stream` starts by time (startingOffsetsByTimestamp, else startingTimestamp), or None."""
        return dict(self.starting_ts_by_stream).get(stream, self.starting_timestamp_ms)

    def start_position(self, stream: str) -> str | int:
        """earliest, latest or the first sequence to read of `stream` (startingOffsets)."""
        return dict(self.starting_by_stream).get(stream, self.starting_offsets)

    def end_position(self, stream: str) -> str | int:
        """latest or the last sequence to read of `stream` (endingOffsets, batch reads)."""
        return dict(self.ending_by_stream).get(stream, self.ending_offsets)

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
        if "startingTimestamp" in given and given & {"startingOffsets", "startingOffsetsByTimestamp"}:
            other = "startingOffsets" if "startingOffsets" in given else "startingOffsetsByTimestamp"
            raise OptionError(f"options {other} and startingTimestamp exclude each other: give one")
        streams: tuple[str, ...] = v["stream"]
        starting, starting_map = _split_per_stream("startingOffsets", v["startingOffsets"], streams, "earliest")
        ts_map: dict[str, int] = v["startingOffsetsByTimestamp"] or {}
        _check_named("startingOffsetsByTimestamp", ts_map, streams)
        both = sorted(set(ts_map) & set(starting_map))
        if both:
            raise OptionError(
                f"options startingOffsets and startingOffsetsByTimestamp both name stream {both[0]!r}: give one"
            )
        ending: str | int | None = None
        ending_map: dict[str, str | int] = {}
        ending_ts = None
        if not streaming:
            ending, ending_map = _split_per_stream("endingOffsets", v["endingOffsets"], streams, "latest")
            ending_ts = v["endingTimestamp"]
            if "endingOffsets" in given and "endingTimestamp" in given:
                raise OptionError("options endingOffsets and endingTimestamp exclude each other: give one")
            for stream in streams:
                first = starting_map.get(stream, starting)
                last = ending_map.get(stream, ending)
                if isinstance(first, int) and isinstance(last, int) and last < first:
                    where = f" of stream {stream!r}" if len(streams) > 1 else ""
                    raise OptionError(f"option endingOffsets{where} ({last}) is before startingOffsets ({first})")
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
        if v["consumer"] is not None:
            _check_consumer(streams, given)
        return cls(
            connection=ConnectionOptions.from_parsed(v),
            streams=v["stream"],
            subjects=v["subjects"],
            durable=v["durable"] if streaming else None,
            consumer=v["consumer"],
            starting_offsets=starting,
            starting_timestamp_ms=v["startingTimestamp"],
            starting_by_stream=tuple(sorted(starting_map.items())),
            starting_ts_by_stream=tuple(sorted(ts_map.items())),
            timestamp_strategy=v["startingOffsetsByTimestampStrategy"],
            ending_offsets="latest" if ending is None else ending,
            ending_timestamp_ms=ending_ts,
            ending_by_stream=tuple(sorted(ending_map.items())),
            max_messages_per_trigger=max_msgs,
            max_bytes_per_trigger=max_bytes,
            min_messages_per_trigger=min_msgs,
            max_trigger_delay_s=delay_s,
            min_partitions=v["minPartitions"],
            max_messages_per_partition=_per_partition(v["maxMessagesPerPartition"], v["maxRecordsPerPartition"], given),
            fail_on_data_loss=v["failOnDataLoss"],
            include_headers=v["includeHeaders"],
            read_mode=v["readMode"],
            filter_pushdown=bool(v["filterPushdown"]) if not streaming else False,
        )


# options the consumer makes meaningless: it decides where reading starts, and how
CONSUMER_EXCLUDES: Final = (
    "durable",
    "readMode",
    "filterPushdown",
    "startingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
)


def _check_consumer(streams: tuple[str, ...], given: frozenset[str]) -> None:
    """Option consumer: one stream, none of the options it makes meaningless."""
    if len(streams) > 1:
        raise OptionError(
            f"option consumer reads one stream (a consumer belongs to one), but option stream names "
            f"{len(streams)}: {', '.join(streams)}"
        )
    for other in CONSUMER_EXCLUDES:
        if other in given:
            why = {
                "durable": "durable creates a consumer of its own and moves it",
                "readMode": "the consumer is how the messages are read",
                "filterPushdown": "the consumer's filter decides what is read",
            }.get(other, "the consumer decides where reading starts (its deliver policy, then its ack floor)")
            raise OptionError(f"options consumer and {other} exclude each other: {why}")


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


def _check_named(option: str, per_stream: Mapping[str, Any], streams: tuple[str, ...]) -> None:
    """Every stream a JSON map names must be one the query reads."""
    for name in per_stream:
        if name not in streams:
            raise OptionError(
                f"option {option} names stream {name!r}, which option stream does not "
                f"({', '.join(streams)})"
            )


def _split_per_stream(
    option: str, value: Any, streams: tuple[str, ...], default: str
) -> tuple[str | int, dict[str, str | int]]:
    """An option of kind PerStream: (the value for streams not named, the JSON map's values)."""
    if not isinstance(value, dict):
        return value, {}
    _check_named(option, value, streams)
    return default, dict(value)
