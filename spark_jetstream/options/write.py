"""Write options of the `jetstream` sink, parsed into a frozen dataclass.

Parsed once on the driver, when Spark builds the writer, from the
case-insensitive Spark option map into `WriteOptions`; the dataclass is
pickled to the executors. The options are declared in `table.py` (the README
table is generated from there); every problem raises `OptionError` naming
the option before anything is published: an unknown option (a typo must not
be ignored silently), a bad number, a bad duration, a subject with wildcards.
Spark itself passes `checkpointLocation` (streaming), `path` (`save(path)`)
and `queryName`, which are accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_jetstream.options.connection import ConnectionOptions
from spark_jetstream.options.grammar import NS_PER_S
from spark_jetstream.options.table import SPARK_WRITE_OPTIONS, Scope, parse_options

__all__ = ["WriteOptions"]


@dataclass(frozen=True, slots=True)
class WriteOptions:
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    subject: str | None = None
    stream: str | None = None
    max_in_flight: int = 2048
    ack_timeout_s: float = 30.0
    dedup_window_check_ns: int = 120_000_000_000
    dedup_window_check_mode: str = "warn"
    msg_id_prefix: str = ""

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> WriteOptions:
        v = parse_options(options, Scope.WRITE, ignored=SPARK_WRITE_OPTIONS)
        return cls(
            connection=ConnectionOptions.from_parsed(v),
            subject=v["subject"],
            stream=v["stream"],
            max_in_flight=v["maxInFlight"],
            ack_timeout_s=v["ackTimeout"] / NS_PER_S,
            dedup_window_check_ns=v["dedupWindowCheck"],
            dedup_window_check_mode=v["dedupWindowCheckMode"],
            msg_id_prefix=v["msgIdPrefix"] or "",
        )
