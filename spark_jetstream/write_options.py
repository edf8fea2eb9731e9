"""Write options of the `jetstream` sink: one table (as data) and one frozen dataclass.

Parsed once on the driver, when Spark builds the writer, from the
case-insensitive Spark option map into `WriteOptions`; the dataclass is
pickled to the executors. Every problem raises `OptionError` naming the
option, before anything is published: an unknown option (a typo must not be
ignored silently), a bad number, a bad duration, a subject with wildcards.

`WRITE_OPTIONS` is the option table (name, default, meaning) the README table
is copied from. Connection options come from `connection.py`; Spark itself
passes `checkpointLocation` (streaming) and `path` (`save(path)`), which are
accepted and ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from spark_jetstream.connection import (
    CONNECTION_OPTION_NAMES,
    ConnectionOptions,
    OptionError,
    lower_keys,
    parse_float,
)


@dataclass(frozen=True, slots=True)
class OptionSpec:
    name: str
    default: str
    meaning: str


WRITE_OPTIONS: Final[tuple[OptionSpec, ...]] = (
    OptionSpec(
        "subject",
        "",
        "Subject every row is published to. Overrides the `subject` column; "
        "one of the two is required.",
    ),
    OptionSpec(
        "stream",
        "",
        "Expected target stream. Checked on the driver before anything is published (the stream "
        "must exist and capture the `subject` option); every message carries "
        "`Nats-Expected-Stream`, so a row whose subject belongs to another stream fails the task.",
    ),
    OptionSpec(
        "maxInFlight",
        "2048",
        "Publishes awaiting their pub ack, per task (1-65536). Every ack is awaited before "
        "the task ends.",
    ),
    OptionSpec(
        "ackTimeout",
        "30",
        "Seconds to wait for a pub ack (including reconnecting to the server) before the task "
        "fails.",
    ),
    OptionSpec(
        "dedupWindowCheck",
        "2m",
        "Shortest acceptable `duplicate_window` of the target stream (a duration: 90s, 10m, 1h, "
        "or seconds; 0 turns the check off). Replays older than the window are not deduplicated.",
    ),
    OptionSpec(
        "dedupWindowCheckMode",
        "warn",
        "What a too short `duplicate_window` does: `warn` (log a warning and write) or `fail` "
        "(refuse to write).",
    ),
    OptionSpec(
        "msgIdPrefix",
        "",
        "Prepended to derived `Nats-Msg-Id`s (not to a `msg_id` column), to keep two pipelines "
        "that read the same source and write the same stream apart.",
    ),
)

WRITE_OPTION_NAMES: Final = frozenset(spec.name.lower() for spec in WRITE_OPTIONS)
# Options Spark itself puts into the map for every sink.
SPARK_OPTION_NAMES: Final = frozenset({"checkpointlocation", "path", "queryname"})
MAX_IN_FLIGHT_LIMIT: Final = 65536
DEDUP_CHECK_MODES: Final = ("warn", "fail")

_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|min|s|m|h|d)")
_NUMBER_RE = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_UNIT_NS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "min": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
}


def write_options_markdown() -> str:
    """The README table of write options (connection options are in the read table)."""
    lines = ["| option | default | meaning |", "|---|---|---|"]
    for spec in WRITE_OPTIONS:
        lines.append(f"| `{spec.name}` | {spec.default or '(none)'} | {spec.meaning} |")
    return "\n".join(lines)


def parse_duration_ns(name: str, raw: str) -> int:
    """A duration in nanoseconds: Go style ("90s", "10m", "1h30m", "500ms"), or a bare
    number of seconds ("600"), as the read options accept."""
    text = raw.strip()
    if _NUMBER_RE.fullmatch(text):
        return int(float(text) * 1_000_000_000)
    pos = 0
    total = 0.0
    for m in _DURATION_RE.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_NS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise OptionError(
            f"option {name}: expected a duration such as 90s, 10m, 1h or a number of seconds, "
            f"got {raw!r}"
        )
    return int(total)


def format_duration_ns(ns: int) -> str:
    """Nanoseconds as a short human duration (for messages)."""
    for unit, size in (("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000)):
        if ns >= size and ns % size == 0:
            return f"{ns // size}{unit}"
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:g}s"
    return f"{ns / 1e6:g}ms"


_SUBJECT_BAD = re.compile(r"[\s*>]")
_STREAM_BAD = re.compile(r"[\s.*>/\\]")


def check_publish_subject(subject: str, what: str) -> None:
    """Raise `OptionError` unless `subject` is a valid subject to publish to."""
    if not subject:
        raise OptionError(f"{what}: empty subject")
    if _SUBJECT_BAD.search(subject):
        raise OptionError(
            f"{what}: {subject!r} is not a subject to publish to (no spaces or wildcards * >)"
        )
    if any(token == "" for token in subject.split(".")):
        raise OptionError(f"{what}: {subject!r} has an empty token")


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
    def from_options(cls, options: Mapping[str, str]) -> WriteOptions:
        opts = lower_keys(options)
        known = WRITE_OPTION_NAMES | SPARK_OPTION_NAMES | frozenset(CONNECTION_OPTION_NAMES)
        unknown = sorted(set(opts) - known)
        if unknown:
            names = ", ".join(spec.name for spec in WRITE_OPTIONS)
            raise OptionError(
                f"unknown option(s) for the jetstream sink: {', '.join(unknown)} "
                f"(write options: {names}; connection options: servers, user, password, token, "
                "credsFile, tls, tlsCaFile, tlsCertFile, tlsKeyFile, connectTimeout)"
            )
        connection = ConnectionOptions.from_options(opts)

        subject = opts.get("subject") or None
        if subject is not None:
            check_publish_subject(subject, "option subject")
        stream = opts.get("stream") or None
        if stream is not None and _STREAM_BAD.search(stream):
            raise OptionError(
                f"option stream: {stream!r} is not a stream name (no spaces, dots, wildcards)"
            )

        raw_window = opts.get("maxinflight", "2048")
        try:
            max_in_flight = int(raw_window)
        except ValueError:
            raise OptionError(f"option maxInFlight: expected an integer, got {raw_window!r}") from None
        if not 1 <= max_in_flight <= MAX_IN_FLIGHT_LIMIT:
            raise OptionError(
                f"option maxInFlight: must be between 1 and {MAX_IN_FLIGHT_LIMIT}, got {raw_window!r}"
            )

        ack_timeout_s = parse_float(opts, "ackTimeout", 30.0, minimum=0.1)
        dedup_ns = parse_duration_ns("dedupWindowCheck", opts.get("dedupwindowcheck", "2m"))
        mode = opts.get("dedupwindowcheckmode", "warn").strip().lower()
        if mode not in DEDUP_CHECK_MODES:
            raise OptionError(
                f"option dedupWindowCheckMode: expected warn or fail, got {opts['dedupwindowcheckmode']!r}"
            )
        prefix = opts.get("msgidprefix", "")
        if any(c in prefix for c in "\r\n"):
            raise OptionError("option msgIdPrefix: must not contain line breaks")
        return cls(
            connection=connection,
            subject=subject,
            stream=stream,
            max_in_flight=max_in_flight,
            ack_timeout_s=ack_timeout_s,
            dedup_window_check_ns=dedup_ns,
            dedup_window_check_mode=mode,
            msg_id_prefix=prefix,
        )
