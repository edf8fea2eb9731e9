"""Write options of the `jetstream` sink, parsed into a frozen dataclass.

Parsed once on the driver, when Spark builds the writer, from the
case-insensitive Spark option map into `WriteOptions`; the dataclass is
pickled to the executors. The options are declared in `table.py` (docs/options.md
table is generated from there); every problem raises `OptionError` naming
the option before anything is published: an unknown option (a typo must not
be ignored silently), a bad number, a bad duration, a subject with wildcards.
Spark itself passes `checkpointLocation` (streaming), `path` (`save(path)`)
and `queryName`, which are accepted and ignored.

Cross-option rules: `msgIdMode=source` needs `msgIdScope` (source ids are
not scoped by a query, so the pipeline must name itself); `msgIdColumns`
only makes sense with content ids (`auto` or `content`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_jetstream.options.connection import ConnectionOptions
from spark_jetstream.options.grammar import NS_PER_S, OptionError, parse_duration_ns
from spark_jetstream.options.table import (
    DEFAULT_DEDUP_WINDOW_CHECK,
    SPARK_WRITE_OPTIONS,
    Scope,
    parse_options,
)

__all__ = ["WriteOptions"]


@dataclass(frozen=True, slots=True)
class WriteOptions:
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    subject: str | None = None
    stream: str | None = None
    max_in_flight: int = 2048
    ack_timeout_s: float = 30.0
    dedup_window_check_ns: int = parse_duration_ns("dedupWindowCheck", DEFAULT_DEDUP_WINDOW_CHECK)
    dedup_window_check_mode: str = "warn"
    msg_id_prefix: str = ""
    msg_id_mode: str = "auto"
    msg_id_scope: str | None = None
    msg_id_columns: tuple[str, ...] = ()
    keep_nats_headers: frozenset[str] = frozenset()

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> WriteOptions:
        v = parse_options(options, Scope.WRITE, ignored=SPARK_WRITE_OPTIONS)
        mode = v["msgIdMode"]
        if mode == "source" and v["msgIdScope"] is None:
            raise OptionError(
                "option msgIdMode=source needs msgIdScope: source ids (<msgIdScope>:<stream>:<seq>:<k>) "
                "are the same for every query reading that source, so the pipeline must name itself"
            )
        if v["msgIdColumns"] and mode not in ("auto", "content"):
            raise OptionError(f"option msgIdColumns applies to content ids, not msgIdMode={mode}")
        return cls(
            connection=ConnectionOptions.from_parsed(v),
            subject=v["subject"],
            stream=v["stream"],
            max_in_flight=v["maxInFlight"],
            ack_timeout_s=v["ackTimeout"] / NS_PER_S,
            dedup_window_check_ns=v["dedupWindowCheck"],
            dedup_window_check_mode=v["dedupWindowCheckMode"],
            msg_id_prefix=v["msgIdPrefix"] or "",
            msg_id_mode=mode,
            msg_id_scope=v["msgIdScope"],
            msg_id_columns=v["msgIdColumns"],
            keep_nats_headers=v["keepNatsHeaders"],
        )
