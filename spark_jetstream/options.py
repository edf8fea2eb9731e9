"""Read options of the `jetstream` source: one table as data, parsed into a frozen dataclass.

`READ_OPTIONS` is the single source of truth for option names, defaults and
meanings (the README table is generated from it with `options_markdown()`).
`ReadOptions.from_options` validates everything on the driver before any
query runs: an unknown option or a bad value raises `OptionError` whose
message names the option. The result is picklable and holds no connection.

Offsets are stream sequences. `startingOffsets=N` means "the first message
read is the first at or after sequence N"; `endingOffsets=N` (batch) means
"the last message read is at or before sequence N" (both inclusive).
Timestamps are milliseconds since the epoch or an ISO-8601 time (UTC if no
zone is given).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from spark_jetstream.connection import (
    CONNECTION_OPTION_NAMES,
    ConnectionOptions,
    OptionError,
    lower_keys,
    parse_bool,
)

__all__ = ["READ_OPTIONS", "OptionError", "OptionSpec", "ReadOptions", "options_markdown"]

BOTH, STREAMING, BATCH = "both", "streaming", "batch"


@dataclass(frozen=True, slots=True)
class OptionSpec:
    name: str
    default: str
    meaning: str
    applies: str = BOTH  # both | streaming | batch


READ_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("servers", "nats://127.0.0.1:4222", "Comma-separated server URLs (nats:// or tls://; user:pass@ allowed)."),
    OptionSpec("stream", "(required)", "The JetStream stream to read."),
    OptionSpec("subjects", "(all)", "Comma-separated subject filter; wildcards `*` and `>` allowed."),
    OptionSpec(
        "durable",
        "(none)",
        "Durable consumer that mirrors progress: its ack floor follows the committed offset "
        "(created if missing); a new query without checkpoint starts from its ack floor.",
        STREAMING,
    ),
    OptionSpec(
        "startingOffsets",
        "earliest",
        "`earliest`, `latest` or a stream sequence (the first message read is at or after it).",
    ),
    OptionSpec(
        "startingTimestamp",
        "(none)",
        "Start at the first message stored at or after this time (ms since epoch or ISO-8601); "
        "excludes startingOffsets.",
    ),
    OptionSpec("endingOffsets", "latest", "`latest` or a stream sequence (the last message read is at or before it).", BATCH),
    OptionSpec("endingTimestamp", "(none)", "Read only messages stored before this time; excludes endingOffsets.", BATCH),
    OptionSpec("maxMessagesPerTrigger", "(none)", "At most this many stream sequences per micro-batch.", STREAMING),
    OptionSpec(
        "maxBytesPerTrigger",
        "(none)",
        "About this many bytes per micro-batch (estimated from the stream's average stored message size).",
        STREAMING,
    ),
    OptionSpec("maxRecordsPerBatch", "(none)", "Spark's name for maxMessagesPerTrigger (the smaller wins).", STREAMING),
    OptionSpec("maxBytesPerBatch", "(none)", "Spark's name for maxBytesPerTrigger (the smaller wins).", STREAMING),
    OptionSpec(
        "minMessagesPerTrigger",
        "(none)",
        "Wait until this many matching messages are available (or maxTriggerDelay passed) before a micro-batch.",
        STREAMING,
    ),
    OptionSpec("maxTriggerDelay", "15m", "Longest wait for minMessagesPerTrigger (e.g. 500ms, 30s, 15m, 1h).", STREAMING),
    OptionSpec("minPartitions", "1", "Split each range into at least this many Spark partitions."),
    OptionSpec("maxMessagesPerPartition", "500000", "Split so that no partition spans more stream sequences than this."),
    OptionSpec(
        "failOnDataLoss",
        "true",
        "Fail when messages to be read are gone (purged, aged out, stream deleted); false skips ahead and logs.",
    ),
    OptionSpec("includeHeaders", "true", "Add the `headers` column (map<string,array<string>>)."),
    OptionSpec("user", "(none)", "User name (with password)."),
    OptionSpec("password", "(none)", "Password (with user)."),
    OptionSpec("token", "(none)", "Authentication token."),
    OptionSpec("credsFile", "(none)", "NATS .creds file (JWT + seed; needs the nkeys package)."),
    OptionSpec("tls", "false", "Use TLS (implied by tls:// URLs and the other tls options)."),
    OptionSpec("tlsCaFile", "(none)", "CA certificate file for TLS."),
    OptionSpec("tlsCertFile", "(none)", "Client certificate file (with tlsKeyFile)."),
    OptionSpec("tlsKeyFile", "(none)", "Client key file (with tlsCertFile)."),
    OptionSpec("connectTimeout", "10", "Connect timeout, seconds."),
)

_BY_LOWER = {spec.name.lower(): spec for spec in READ_OPTIONS}
assert set(CONNECTION_OPTION_NAMES) <= set(_BY_LOWER)

_NAME_RE = re.compile(r"^[^\s.*>/\\]+$")
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def options_markdown() -> str:
    """The README table of read options."""
    lines = ["| option | default | applies to | meaning |", "|---|---|---|---|"]
    for spec in READ_OPTIONS:
        lines.append(f"| `{spec.name}` | {spec.default} | {spec.applies} | {spec.meaning} |")
    return "\n".join(lines)


def _int(opts: Mapping[str, str], name: str, minimum: int) -> int | None:
    raw = opts.get(name.lower())
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(f"option {name}: expected an integer, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {name}: must be >= {minimum}, got {raw!r}")
    return value


def parse_duration_s(name: str, raw: str) -> float:
    m = _DURATION_RE.match(raw)
    if m is None:
        raise OptionError(f"option {name}: expected a duration like 500ms, 30s, 15m or 1h, got {raw!r}")
    return float(m.group(1)) * _UNITS[(m.group(2) or "s").lower()]


def parse_timestamp_ms(name: str, raw: str) -> int:
    text = raw.strip()
    if re.fullmatch(r"-?\d+", text):
        value = int(text)
        if value < 0:
            raise OptionError(f"option {name}: must be >= 0, got {raw!r}")
        return value
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise OptionError(
            f"option {name}: expected milliseconds since the epoch or an ISO-8601 time, got {raw!r}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def _position(name: str, raw: str | None, words: tuple[str, ...], default: str) -> str | int:
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip().lower()
    if text in words:
        return text
    try:
        value = int(text)
    except ValueError:
        raise OptionError(
            f"option {name}: expected {' or '.join(words)} or a stream sequence number, got {raw!r}"
        ) from None
    if value < 1:
        raise OptionError(f"option {name}: a stream sequence starts at 1, got {raw!r}")
    return value


def _check_subject(token_source: str, subject: str) -> None:
    tokens = subject.split(".")
    for i, token in enumerate(tokens):
        bad = (
            token == ""
            or any(ch.isspace() for ch in token)
            or (">" in token and (token != ">" or i != len(tokens) - 1))
            or ("*" in token and token != "*")
        )
        if bad:
            raise OptionError(f"option {token_source}: invalid subject {subject!r}")


@dataclass(frozen=True)
class ReadOptions:
    """Validated read options (driver and executors)."""

    connection: ConnectionOptions
    stream: str
    subjects: tuple[str, ...] = ()
    durable: str | None = None
    starting_offsets: str | int = "earliest"
    starting_timestamp_ms: int | None = None
    ending_offsets: str | int = "latest"
    ending_timestamp_ms: int | None = None
    max_messages_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    min_messages_per_trigger: int | None = None
    max_trigger_delay_s: float = 900.0
    min_partitions: int = 1
    max_messages_per_partition: int = 500_000
    fail_on_data_loss: bool = True
    include_headers: bool = True

    @classmethod
    def from_options(cls, options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
        opts = lower_keys(options)
        mode = STREAMING if streaming else BATCH
        for key in opts:
            spec = _BY_LOWER.get(key)
            if spec is None:
                known = ", ".join(s.name for s in READ_OPTIONS)
                raise OptionError(f"unknown option {key!r} for reading from jetstream (known: {known})")
            if spec.applies not in (BOTH, mode):
                raise OptionError(f"option {spec.name} applies only to {spec.applies} reads, not {mode} reads")

        stream = opts.get("stream", "").strip()
        if not stream:
            raise OptionError("option stream is required (the JetStream stream to read)")
        if not _NAME_RE.match(stream):
            raise OptionError(f"option stream: invalid stream name {stream!r}")
        subjects = tuple(s.strip() for s in opts.get("subjects", "").split(",") if s.strip())
        for subject in subjects:
            _check_subject("subjects", subject)
        if len(set(subjects)) != len(subjects):
            raise OptionError(f"option subjects: duplicate subject in {opts['subjects']!r}")
        durable = opts.get("durable")
        if durable is not None:
            durable = durable.strip()
            if not durable or not _NAME_RE.match(durable):
                raise OptionError(f"option durable: invalid consumer name {durable!r}")

        starting = _position("startingOffsets", opts.get("startingoffsets"), ("earliest", "latest"), "earliest")
        starting_ts = None
        if opts.get("startingtimestamp"):
            if opts.get("startingoffsets"):
                raise OptionError("options startingOffsets and startingTimestamp exclude each other: give one")
            starting_ts = parse_timestamp_ms("startingTimestamp", opts["startingtimestamp"])
        ending = _position("endingOffsets", opts.get("endingoffsets"), ("latest",), "latest")
        ending_ts = None
        if opts.get("endingtimestamp"):
            if opts.get("endingoffsets"):
                raise OptionError("options endingOffsets and endingTimestamp exclude each other: give one")
            ending_ts = parse_timestamp_ms("endingTimestamp", opts["endingtimestamp"])
        if isinstance(starting, int) and isinstance(ending, int) and ending < starting:
            raise OptionError(f"option endingOffsets ({ending}) is before startingOffsets ({starting})")
        if starting_ts is not None and ending_ts is not None and ending_ts < starting_ts:
            raise OptionError("option endingTimestamp is before startingTimestamp")

        max_msgs = _min_of(
            _int(opts, "maxMessagesPerTrigger", 1), _int(opts, "maxRecordsPerBatch", 1)
        )
        max_bytes = _min_of(_int(opts, "maxBytesPerTrigger", 1), _int(opts, "maxBytesPerBatch", 1))
        min_msgs = _int(opts, "minMessagesPerTrigger", 1)
        if min_msgs is not None and max_msgs is not None and min_msgs > max_msgs:
            raise OptionError(
                f"option minMessagesPerTrigger ({min_msgs}) is larger than maxMessagesPerTrigger ({max_msgs})"
            )
        delay_raw = opts.get("maxtriggerdelay")
        delay = parse_duration_s("maxTriggerDelay", delay_raw) if delay_raw else 900.0
        if delay_raw and min_msgs is None:
            raise OptionError("option maxTriggerDelay needs minMessagesPerTrigger")

        return cls(
            connection=ConnectionOptions.from_options(
                {k: v for k, v in opts.items() if k in CONNECTION_OPTION_NAMES}
            ),
            stream=stream,
            subjects=subjects,
            durable=durable,
            starting_offsets=starting,
            starting_timestamp_ms=starting_ts,
            ending_offsets=ending,
            ending_timestamp_ms=ending_ts,
            max_messages_per_trigger=max_msgs,
            max_bytes_per_trigger=max_bytes,
            min_messages_per_trigger=min_msgs,
            max_trigger_delay_s=delay,
            min_partitions=_int(opts, "minPartitions", 1) or 1,
            max_messages_per_partition=_int(opts, "maxMessagesPerPartition", 1) or 500_000,
            fail_on_data_loss=parse_bool(opts, "failOnDataLoss", True),
            include_headers=parse_bool(opts, "includeHeaders", True),
        )


def _min_of(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
