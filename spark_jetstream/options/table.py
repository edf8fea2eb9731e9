"""Every option of the `jetstream` source and sink, declared once, as data.

`OPTIONS` is the single source of truth: each `Option` has a name, a kind (how
its value is read, see `grammar.py`), a default written the way a user would
write it (and parsed by the same kind, so the documented default is the
default), where it applies (batch reads, streaming reads, writes) and its help
text. The readers and writers parse their options with `parse_options`; the
docs/options.md's option tables are generated from the same table (`read_table`,
`write_table`; `python -m spark_jetstream.options --update docs/options.md` rewrites
them, a test checks they match).

Parsing rules, the same for every option: names are case-insensitive (Spark
passes them lower-cased); an empty value is the same as no value; an option
that does not exist, or exists only for another kind of read or for writes,
raises `OptionError` naming it; a bad value raises `OptionError` naming the
option (from its kind's parser). Cross-option rules (exclusions, minimum
below maximum) live with the option groups (`read.py`, `write.py`,
`connection.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Flag, auto
from typing import Any, Final

from spark_jetstream.options.files import find_file, not_found_text
from spark_jetstream.options.grammar import (
    GRAMMAR_MARKDOWN,
    OptionError,
    check_filter_subject,
    check_publish_subject,
    parse_bool,
    parse_choice,
    parse_count,
    parse_duration_ns,
    parse_name,
    parse_position,
    parse_size,
    parse_stream_map,
    parse_timestamp_ms,
)
from spark_jetstream.options.secrets import redact_url

__all__ = [
    "OPTIONS",
    "SPARK_WRITE_OPTIONS",
    "Option",
    "ParsedOptions",
    "Scope",
    "lower_keys",
    "option_value",
    "parse_options",
    "connection_table",
    "read_table",
    "readme_sections",
    "update_sections",
    "write_table",
]


class Scope(Flag):
    """Where an option applies."""

    BATCH_READ = auto()
    STREAM_READ = auto()
    WRITE = auto()
    READ = BATCH_READ | STREAM_READ
    ALL = READ | WRITE

    def describe(self) -> str:
        """Plural noun phrase for messages: "batch reads", "reads", "writes"."""
        parts = []
        if Scope.READ in self:
            parts.append("reads")
        elif Scope.BATCH_READ in self:
            parts.append("batch reads")
        elif Scope.STREAM_READ in self:
            parts.append("streaming reads")
        if Scope.WRITE in self:
            parts.append("writes")
        return " and ".join(parts)


# -- kinds: how one option's value is read -------------------------------------------


class Kind:
    """How an option's text becomes its value; `absent` is the value of an unset option
    without a default."""

    absent: Any = None

    def parse(self, option: str, raw: str) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Text(Kind):
    """Free text, taken as given (passwords, tokens, prefixes)."""

    single_line: bool = False

    def parse(self, option: str, raw: str) -> str:
        if self.single_line and any(c in raw for c in "\r\n"):
            raise OptionError(f"option {option}: must not contain line breaks")
        return raw


@dataclass(frozen=True)
class File(Kind):
    """A path to a file that must exist on the driver: at that path, or distributed by Spark
    (`spark.files`, `SparkContext.addFile`) under its base name. Kept as given: each
    executor finds it again where it runs (files.py)."""

    def parse(self, option: str, raw: str) -> str:
        if find_file(raw) is None:
            raise OptionError(not_found_text(option, raw))
        return raw


@dataclass(frozen=True)
class Name(Kind):
    """A stream or consumer name."""

    what: str

    def parse(self, option: str, raw: str) -> str:
        return parse_name(option, raw, self.what)


@dataclass(frozen=True)
class StreamNames(Kind):
    """Comma-separated stream names; no duplicates."""

    absent: Any = ()

    def parse(self, option: str, raw: str) -> tuple[str, ...]:
        names = tuple(parse_name(option, n, "stream name") for n in raw.split(",") if n.strip())
        if len(set(names)) != len(names):
            raise OptionError(f"option {option}: duplicate stream in {raw!r}")
        return names


@dataclass(frozen=True)
class FilterSubjects(Kind):
    """Comma-separated subjects with wildcards; no duplicates."""

    absent: Any = ()

    def parse(self, option: str, raw: str) -> tuple[str, ...]:
        subjects = tuple(s.strip() for s in raw.split(",") if s.strip())
        for subject in subjects:
            check_filter_subject(option, subject)
        if len(set(subjects)) != len(subjects):
            raise OptionError(f"option {option}: duplicate subject in {raw!r}")
        return subjects


@dataclass(frozen=True)
class PublishSubject(Kind):
    """One subject to publish to (no wildcards)."""

    def parse(self, option: str, raw: str) -> str:
        subject = raw.strip()
        check_publish_subject(subject, f"option {option}")
        return subject


@dataclass(frozen=True)
class SubjectPrefix(Kind):
    """The first tokens of subjects (no wildcards); a trailing dot is dropped."""

    def parse(self, option: str, raw: str) -> str:
        prefix = raw.strip()
        prefix = prefix[:-1] if prefix.endswith(".") else prefix
        check_publish_subject(prefix, f"option {option}")
        return prefix


@dataclass(frozen=True)
class Servers(Kind):
    """Comma-separated server URLs."""

    def parse(self, option: str, raw: str) -> tuple[str, ...]:
        servers = tuple(s.strip() for s in raw.split(",") if s.strip())
        if not servers:
            raise OptionError(f"option {option}: no server URL given")
        for url in servers:
            if "://" not in url:
                raise OptionError(
                    f"option {option}: {redact_url(url)!r} is not a URL (expected nats://host:port "
                    "or tls://host:port)"
                )
        return servers


@dataclass(frozen=True)
class Bool(Kind):
    def parse(self, option: str, raw: str) -> bool:
        return parse_bool(option, raw)


@dataclass(frozen=True)
class Count(Kind):
    minimum: int = 1
    maximum: int | None = None

    def parse(self, option: str, raw: str) -> int:
        return parse_count(option, raw, minimum=self.minimum, maximum=self.maximum)


@dataclass(frozen=True)
class Size(Kind):
    minimum: int = 1

    def parse(self, option: str, raw: str) -> int:
        return parse_size(option, raw, minimum=self.minimum)


@dataclass(frozen=True)
class Duration(Kind):
    """A duration, as nanoseconds. `seconds_first` for options documented in seconds."""

    minimum_ns: int = 0
    seconds_first: bool = False

    def parse(self, option: str, raw: str) -> int:
        return parse_duration_ns(option, raw, minimum_ns=self.minimum_ns, seconds_first=self.seconds_first)


@dataclass(frozen=True)
class Timestamp(Kind):
    """Milliseconds since the epoch."""

    def parse(self, option: str, raw: str) -> int:
        return parse_timestamp_ms(option, raw)


@dataclass(frozen=True)
class Position(Kind):
    """A named position (earliest, latest) or a stream sequence."""

    words: tuple[str, ...]

    def parse(self, option: str, raw: str) -> str | int:
        return parse_position(option, raw, self.words)


@dataclass(frozen=True)
class PerStream(Kind):
    """One value for every stream, or a JSON object of stream -> value (multi-stream reads):
    each value read by `each`. The value is the single one, or a dict."""

    each: Kind

    def parse(self, option: str, raw: str) -> Any:
        if not raw.lstrip().startswith("{"):
            return self.each.parse(option, raw)
        return {s: self.each.parse(f"{option}[{s}]", v) for s, v in parse_stream_map(option, raw).items()}


@dataclass(frozen=True)
class StreamMap(Kind):
    """A JSON object of stream -> value, each read by `each` (named `<option>[<stream>]`)."""

    each: Kind

    def parse(self, option: str, raw: str) -> dict[str, Any]:
        return {s: self.each.parse(f"{option}[{s}]", v) for s, v in parse_stream_map(option, raw).items()}


@dataclass(frozen=True)
class Choice(Kind):
    choices: tuple[str, ...]

    def parse(self, option: str, raw: str) -> str:
        return parse_choice(option, raw, self.choices)


@dataclass(frozen=True)
class ColumnNames(Kind):
    """Comma-separated DataFrame column names; no duplicates (case-insensitive)."""

    absent: Any = ()

    def parse(self, option: str, raw: str) -> tuple[str, ...]:
        names = tuple(n.strip() for n in raw.split(",") if n.strip())
        if not names:
            raise OptionError(f"option {option}: no column name in {raw!r}")
        if len({n.lower() for n in names}) != len(names):
            raise OptionError(f"option {option}: a column is named twice in {raw!r}")
        return names


@dataclass(frozen=True)
class HeaderNames(Kind):
    """Comma-separated `Nats-*` header names, lower-cased (header names are case-insensitive)."""

    absent: Any = frozenset()

    def parse(self, option: str, raw: str) -> frozenset[str]:
        names = [n.strip() for n in raw.split(",") if n.strip()]
        for name in names:
            if not name.lower().startswith("nats-") or any(c in name for c in " \t:"):
                raise OptionError(
                    f"option {option}: {name!r} is not a Nats-* header name (other headers are "
                    "always published)"
                )
            if name.lower() == "nats-msg-id":
                raise OptionError(
                    f"option {option}: Nats-Msg-Id is set by the sink; choose ids with the msg_id "
                    "column (msgIdMode=column)"
                )
        return frozenset(n.lower() for n in names)


# -- the table ----------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    name: str
    kind: Kind
    default: str | None
    applies: Scope
    help: str
    shown: str | None = None  # docs/options.md's default column when there is no default value
    spark: tuple[int, int] | None = None  # the Spark release this option needs (None: 4.0, every one)

    @property
    def key(self) -> str:
        return self.name.lower()

    def default_value(self) -> Any:
        return self.kind.absent if self.default is None else self.kind.parse(self.name, self.default)

    def is_set(self, raw: str | None) -> bool:
        """False for no value or an empty one (blank, except for free text)."""
        if not raw:
            return False
        return isinstance(self.kind, Text) or bool(raw.strip())

    def value(self, raw: str | None) -> Any:
        """The value of this option given `raw`: parsed when set, else the default."""
        if raw is not None and self.is_set(raw):
            return self.kind.parse(self.name, raw)
        return self.default_value()

    @property
    def shown_default(self) -> str:
        return self.shown or self.default or "(none)"


R, S, B, W, ALL = Scope.READ, Scope.STREAM_READ, Scope.BATCH_READ, Scope.WRITE, Scope.ALL
SECOND_NS: Final = 1_000_000_000
DEFAULT_SERVERS: Final = "nats://127.0.0.1:4222"
MAX_IN_FLIGHT_LIMIT: Final = 65536
DEDUP_CHECK_MODES: Final = ("warn", "fail")
DEFAULT_INBOX_PREFIX: Final = "_INBOX"
DEFAULT_DEDUP_WINDOW_CHECK: Final = "10m"
MSG_ID_MODES: Final = ("auto", "column", "content", "source")
READ_MODES: Final = ("consumer", "direct")
# Spark gives a Python streaming source read limits from 4.2 on; before, Trigger.AvailableNow
# takes one end offset for its whole run, so a per-trigger limit would end the run early.
READ_LIMITS: Final = (4, 2)
SPARK_WHY: Final = {
    (4, 1): "Spark before 4.1 has no filter pushdown for Python data sources",
    READ_LIMITS: "Spark before 4.2 gives a Python streaming source no read limits, and Trigger.AvailableNow "
    "would end after one capped micro-batch",
}

OPTIONS: Final[tuple[Option, ...]] = (
    Option("servers", Servers(), DEFAULT_SERVERS, ALL,
           "Comma-separated server URLs (nats:// or tls://; user:pass@ allowed)."),
    # -- reads
    Option("stream", StreamNames(), None, R,
           "The JetStream stream to read, or several (comma-separated: one source, one offset per stream).",
           shown="(required)"),
    Option("subjects", FilterSubjects(), None, R,
           "Comma-separated subject filter; wildcards `*` and `>` allowed.", shown="(all)"),
    Option("durable", Name("consumer name"), None, S,
           "Durable consumer that mirrors progress (best effort): its ack floor follows the committed "
           "offset (created and marked if missing; one made by another application or with another "
           "filter is refused); a new query without checkpoint starts from its ack floor."),
    Option("consumer", Name("consumer name"), None, R,
           "Read through this existing durable pull consumer of `stream` (made by an operator; "
           "never created, changed or deleted): needs only `$JS.API.CONSUMER.INFO`, "
           "`$JS.API.CONSUMER.MSG.NEXT` and `$JS.ACK` on it. Streaming: the query starts after its "
           "ack floor; the driver pulls each micro-batch (at most maxMessagesPerTrigger, default "
           "100000, maxBytesPerTrigger, default 32 MiB, and the consumer's max_ack_pending) and "
           "acknowledges it once the batch commits. Batch: what the consumer would deliver next "
           "(handed back unacknowledged, at once due again). One stream; option subjects, if given, must "
           "equal its filter; excludes durable, readMode, filterPushdown and the starting options. "
           "A consumer that cannot give exactly-once (push, ack none, max_deliver not -1, a changed "
           "filter, ...) is refused naming the setting. See docs/permissions.md."),
    Option("startingOffsets", PerStream(Position(("earliest", "latest"))), "earliest", R,
           "`earliest`, `latest` or a stream sequence (the first message read is at or after it); "
           "or per stream, as JSON: `{\"ORDERS\": 1200, \"EVENTS\": \"latest\"}` (a stream not "
           "named starts at `earliest`)."),
    Option("startingTimestamp", Timestamp(), None, R,
           "Start at the first message stored at or after this time (ms since epoch or ISO-8601); "
           "excludes startingOffsets and startingOffsetsByTimestamp."),
    Option("startingOffsetsByTimestamp", StreamMap(Timestamp()), None, R,
           "Per stream, as JSON, the time to start at (`{\"ORDERS\": 1700000000000, \"EVENTS\": "
           "\"2024-05-01T00:00:00Z\"}`); the other streams start by startingOffsets (which must not "
           "name the same stream)."),
    Option("startingOffsetsByTimestampStrategy", Choice(("error", "latest")), "error", R,
           "When no message is stored at or after startingTimestamp: `error` fails naming the time, "
           "`latest` starts at the end of the stream (as Spark's Kafka source)."),
    Option("endingOffsets", PerStream(Position(("latest",))), "latest", B,
           "`latest` or a stream sequence (the last message read is at or before it); or per "
           "stream, as JSON (a stream not named ends at `latest`)."),
    Option("endingTimestamp", Timestamp(), None, B,
           "Read only messages stored before this time; excludes endingOffsets."),
    Option("maxMessagesPerTrigger", Count(1), None, S,
           "At most this many messages per micro-batch (matching messages when subjects is set; "
           "split across streams by backlog).", spark=READ_LIMITS),
    Option("maxBytesPerTrigger", Size(1), None, S,
           "About this many bytes per micro-batch (a size; estimated from the stream's average "
           "stored message size, then counted like maxMessagesPerTrigger).", spark=READ_LIMITS),
    Option("maxOffsetsPerTrigger", Count(1), None, S,
           "Spark's Kafka name for maxMessagesPerTrigger (same meaning; the smaller wins).", spark=READ_LIMITS),
    Option("minOffsetsPerTrigger", Count(1), None, S,
           "Spark's Kafka name for minMessagesPerTrigger (same meaning; excludes it).", spark=READ_LIMITS),
    Option("minMessagesPerTrigger", Count(1), None, S,
           "Wait until this many matching messages are available (or maxTriggerDelay passed) "
           "before a micro-batch.", spark=READ_LIMITS),
    Option("maxTriggerDelay", Duration(), "15m", S,
           "Longest wait for minMessagesPerTrigger (a duration: 500ms, 30s, 15m, 1h30m).", spark=READ_LIMITS),
    Option("minPartitions", Count(1), None, R,
           "Split each range into at least this many Spark partitions. Not given: into parts of at "
           "least 150,000 messages (a smaller range is one partition).",
           shown="by size"),
    Option("maxMessagesPerPartition", Count(1), "500000", R,
           "Split so that no partition spans more stream sequences than this."),
    Option("maxRecordsPerPartition", Count(1), None, R,
           "Spark's Kafka name for maxMessagesPerPartition (same meaning; with both, the smaller wins).",
           shown="500000"),
    Option("filterPushdown", Bool(), "false", B,
           "Narrow a batch read by the query's filters on `seq`, `timestamp` and `subject` (a 1 % "
           "slice reads about 1 % of the stream). Needs Spark's conf "
           "`spark.sql.python.filterPushdown.enabled=true` too (Spark refuses the reader otherwise).",
           spark=(4, 1)),
    Option("readMode", Choice(READ_MODES), "consumer", R,
           "How ranges are read: `consumer` (a short-lived read consumer per partition: needs the "
           "right to create and delete consumers on the stream) or `direct` (by sequence, no "
           "consumer: needs only `$JS.API.STREAM.INFO.<stream>` and `$JS.API.DIRECT.GET.<stream>` "
           "(batched, a stream with allow_direct on nats-server 2.11+) or else "
           "`$JS.API.STREAM.MSG.GET.<stream>` (one request per message); excludes durable). See "
           "docs/permissions.md."),
    Option("failOnDataLoss", Bool(), "true", R,
           "Fail when messages to be read are gone (purged, aged out, stream deleted); false "
           "skips ahead and logs."),
    Option("includeHeaders", Bool(), "true", R,
           "Add the `headers` column (map<string,array<string>>)."),
    # -- connection (reads and writes)
    Option("user", Text(), None, ALL, "User name (with password)."),
    Option("password", Text(), None, ALL, "Password (with user); never shown in errors, logs or reprs."),
    Option("token", Text(), None, ALL, "Authentication token; never shown in errors, logs or reprs."),
    Option("credsFile", File(), None, ALL,
           "NATS .creds file: user JWT + NKey seed (needs the nkeys extra)."),
    Option("nkeySeedFile", File(), None, ALL,
           "File holding an NKey user seed (`SU...`): signs the server's nonce; alone for an NKey "
           "user, with userJwt for a JWT user (needs the nkeys extra)."),
    Option("userJwt", Text(single_line=True), None, ALL,
           "User JWT, signed for with nkeySeedFile's seed (decentralised auth without a .creds file)."),
    Option("tls", Bool(), "false", ALL, "Use TLS (implied by tls:// URLs and the other tls options)."),
    Option("tlsCaFile", File(), None, ALL, "CA certificate file for TLS."),
    Option("tlsCertFile", File(), None, ALL, "Client certificate file (with tlsKeyFile)."),
    Option("tlsKeyFile", File(), None, ALL, "Client key file (with tlsCertFile)."),
    Option("connectTimeout", Duration(SECOND_NS // 10, seconds_first=True), "10", ALL,
           "Connect timeout of one attempt on one server (a duration; a plain number is seconds)."),
    Option("requestTimeout", Duration(SECOND_NS // 100), "10s", ALL,
           "Wait for the reply to one JetStream API request (one attempt; like Kafka's "
           "request.timeout.ms)."),
    Option("retryTimeout", Duration(), "60s", ALL,
           "Total time one call to the server (connecting, a JetStream API request, resuming a read) "
           "keeps retrying transient failures: connection refused or lost, no reply, no responders "
           "or `JetStream system temporarily unavailable` (503, e.g. a cluster electing a leader). "
           "0 fails at the first one."),
    Option("retryBackoff", Duration(SECOND_NS // 1000), "100ms", ALL,
           "Wait before the first retry; doubled after each one up to retryBackoffMax, with "
           "jitter (like Kafka's retry.backoff.ms)."),
    Option("retryBackoffMax", Duration(SECOND_NS // 1000), "2s", ALL,
           "Longest wait between two retries (like Kafka's retry.backoff.max.ms)."),
    Option("inboxPrefix", SubjectPrefix(), DEFAULT_INBOX_PREFIX, ALL,
           "Prefix of the reply subjects the connector subscribes to (for accounts whose "
           "permissions allow only some inboxes)."),
    Option("domain", Name("JetStream domain"), None, ALL,
           "JetStream domain: API requests go to `$JS.<domain>.API.>` (a leaf node's or hub's "
           "JetStream); excludes apiPrefix."),
    Option("apiPrefix", SubjectPrefix(), None, ALL,
           "JetStream API subject prefix, for an account that imports another's JetStream API "
           "(default `$JS.API`); excludes domain.", shown="$JS.API"),
    # -- writes
    Option("subject", PublishSubject(), None, W,
           "Subject every row is published to. Overrides the `subject` column; one of the two "
           "is required."),
    Option("stream", Name("stream name"), None, W,
           "Expected target stream: every message carries `Nats-Expected-Stream`, so a row whose "
           "subject belongs to another stream (or to none) fails its task, naming the subject."),
    Option("maxInFlight", Count(1, MAX_IN_FLIGHT_LIMIT), "2048", W,
           f"Publishes awaiting their pub ack, per task (1-{MAX_IN_FLIGHT_LIMIT}). Every ack is "
           "awaited before the task ends."),
    Option("ackTimeout", Duration(SECOND_NS // 10, seconds_first=True), "30", W,
           "Time to wait for a pub ack (including reconnecting to the server) before the task "
           "fails (a duration; a plain number is seconds)."),
    Option("dedupWindowCheck", Duration(), DEFAULT_DEDUP_WINDOW_CHECK, W,
           "Shortest acceptable `duplicate_window` of each stream the sink wrote to (a duration: "
           "90s, 10m, 1h, or seconds; 0 turns the check off): a replay later than the window is "
           "stored twice. Checked once per stream, on the driver, when the first write to it "
           "commits. The default is above nats-server's default window (2m), which a query "
           "restart easily outlasts."),
    Option("dedupWindowCheckMode", Choice(DEDUP_CHECK_MODES), "warn", W,
           "What a too short `duplicate_window` does: `warn` (log a warning) or `fail` (fail the "
           "write or the micro-batch at its commit; what its tasks published stays)."),
    Option("msgIdPrefix", Text(single_line=True), None, W,
           "Prepended to derived `Nats-Msg-Id`s (not to a `msg_id` column)."),
    # added for the write side of issue 16 (message id modes, header filtering)
    Option("msgIdMode", Choice(MSG_ID_MODES), "auto", W,
           "How each row's `Nats-Msg-Id` is made: `column` (the `msg_id` column), `content` (a "
           "hash of the written subject, headers and data, or of msgIdColumns, plus the row's "
           "occurrence count), `source` (`<msgIdScope>:<stream>:<seq>:<k>` from the source "
           "coordinate columns `stream`, `seq`; needs msgIdScope), `auto` (`column` when there is "
           "a `msg_id` column, else `content`). See \"How exactly-once works\"."),
    Option("msgIdScope", Text(single_line=True), None, W,
           "The sink's identity in derived ids. `source` mode: required, names the pipeline (two "
           "pipelines writing one stream from one source need different scopes). `content` mode: "
           "distinguishes writes (e.g. `orders-<batchId>` for a `df.write` in `foreachBatch`; "
           "inside a streaming query the query id and batch id are added anyway)."),
    Option("msgIdColumns", ColumnNames(), None, W,
           "Comma-separated columns whose values identify a row: `content` ids hash these instead "
           "of the written content, and without the partition id (rows with equal values in one "
           "write share an id).", shown="(written content)"),
    Option("keepNatsHeaders", HeaderNames(), None, W,
           "Comma-separated `Nats-*` headers of the `headers` column to publish; every other "
           "`Nats-*` header (server directives a source row carries: `Nats-Rollup`, `Nats-TTL`, "
           "`Nats-Expected-*`...) is dropped. `Nats-Msg-Id` is always the sink's own."),
)

# Options Spark itself puts into a sink's option map: accepted on writes, ignored.
SPARK_WRITE_OPTIONS: Final = frozenset({"checkpointlocation", "path", "queryname"})

_BY_KEY: Final[dict[str, tuple[Option, ...]]] = {}
for _option in OPTIONS:
    _BY_KEY[_option.key] = (*_BY_KEY.get(_option.key, ()), _option)
    if _option.default is not None:
        _option.default_value()  # a default the grammar refuses is a bug: fail at import


def lower_keys(options: Mapping[str, Any]) -> dict[str, str]:
    """Spark option maps are case-insensitive: one lower-case key per option."""
    out: dict[str, str] = {}
    spelled: dict[str, str] = {}
    for k, v in options.items():
        key = str(k).lower()
        if key in out:
            raise OptionError(f"option {k} given twice (as {spelled[key]!r} and {str(k)!r})")
        out[key] = "" if v is None else str(v)
        spelled[key] = str(k)
    return out


@dataclass(frozen=True)
class ParsedOptions:
    """Every option of one scope: its value (or default) by name, and which were set."""

    values: Mapping[str, Any]
    given: frozenset[str]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def _applicable(scope: Scope, table: Sequence[Option]) -> list[Option]:
    return [o for o in table if o.applies & scope]


def parse_options(
    options: Mapping[str, Any],
    scope: Scope,
    *,
    table: Sequence[Option] = OPTIONS,
    ignored: frozenset[str] = frozenset(),
    spark: tuple[tuple[int, int], str] | None = None,
) -> ParsedOptions:
    """Validate `options` for `scope` against `table` and parse every value.

    `scope` is one of BATCH_READ, STREAM_READ, WRITE (or ALL, for a table of
    options that apply everywhere); `ignored` are lower-case names accepted
    and skipped (Spark's own options of a sink). `spark`: the running Spark's
    API level and version (spark_features.py); an option given that needs a
    later release is refused, naming the option and both versions.
    """
    opts = lower_keys(options)
    applicable = _applicable(scope, table)
    by_key = {o.key: o for o in applicable}
    unknown: list[str] = []
    for key in opts:
        if key in by_key or key in ignored:
            continue
        elsewhere = [o for o in _BY_KEY.get(key, ()) if o in table]
        if elsewhere:
            where = elsewhere[0].applies
            for other in elsewhere[1:]:
                where |= other.applies
            raise OptionError(
                f"option {elsewhere[0].name} applies only to {where.describe()}, not {scope.describe()}"
            )
        unknown.append(key)
    if unknown:
        known = ", ".join(o.name for o in applicable)
        what = {Scope.WRITE: "writing to", Scope.ALL: "connecting to"}.get(scope, "reading from")
        names = ", ".join(repr(k) for k in unknown)
        raise OptionError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {names} for {what} jetstream "
            f"(known: {known})"
        )
    values: dict[str, Any] = {}
    given: set[str] = set()
    for option in applicable:
        raw = opts.get(option.key)
        values[option.name] = option.value(raw)
        if option.is_set(raw):
            given.add(option.name)
            if spark is not None and option.spark is not None and spark[0] < option.spark:
                needed = ".".join(map(str, option.spark))
                why = SPARK_WHY.get(option.spark, "")
                raise OptionError(
                    f"option {option.name} needs Spark {needed} or later (this is Spark {spark[1]})"
                    + (f": {why}" if why else "")
                )
    return ParsedOptions(values, frozenset(given))


def option_value(options: Mapping[str, Any], name: str, scope: Scope) -> Any:
    """The value of the option `name` for `scope` in `options`, ignoring every other option."""
    option = next(o for o in OPTIONS if o.name == name and o.applies & scope)
    return option.value(lower_keys(options).get(option.key))


# -- the docs/options.md tables -----------------------------------------------------------


def _applies_column(scope: Scope) -> str:
    read = scope & Scope.READ
    if read == Scope.READ:
        return "both"
    return "streaming" if read == Scope.STREAM_READ else "batch"


def read_table(*, connection: bool = True) -> str:
    """The docs/options.md table of read options (with the connection options unless `connection=False`)."""
    lines = ["| option | default | applies to | meaning |", "|---|---|---|---|"]
    for o in OPTIONS:
        if o.applies & Scope.READ and (connection or o.applies != Scope.ALL):
            lines.append(f"| `{o.name}` | {o.shown_default} | {_applies_column(o.applies)} | {o.help}{_needs(o)} |")
    return "\n".join(lines)


def _needs(option: Option) -> str:
    """The Spark release an option needs, for its help column ("" for every release)."""
    return f" Spark {'.'.join(map(str, option.spark))}+." if option.spark else ""


def write_table() -> str:
    """The docs/options.md table of write options (the connection options are in the read table)."""
    lines = ["| option | default | meaning |", "|---|---|---|"]
    for o in OPTIONS:
        if o.applies == Scope.WRITE:
            lines.append(f"| `{o.name}` | {o.shown_default} | {o.help} |")
    return "\n".join(lines)


def connection_table() -> str:
    """The docs/options.md table of the connection options (reads and writes alike)."""
    lines = ["| option | default | meaning |", "|---|---|---|"]
    for o in OPTIONS:
        if o.applies == Scope.ALL:
            lines.append(f"| `{o.name}` | {o.shown_default} | {o.help} |")
    return "\n".join(lines)


def readme_sections() -> dict[str, str]:
    """The generated docs/options.md sections by marker name."""
    return {
        "option-grammar": GRAMMAR_MARKDOWN,
        "read-options": read_table(connection=False),
        "write-options": write_table(),
        "connection-options": connection_table(),
    }


def _section_re(name: str) -> re.Pattern[str]:
    n = re.escape(name)
    return re.compile(rf"(<!-- BEGIN GENERATED {n} [^\n]*-->\n)(.*?)\n?(<!-- END GENERATED {n} -->)", re.DOTALL)


def section(text: str, name: str) -> str | None:
    """The body of generated section `name` in `text`, or None if the markers are missing."""
    m = _section_re(name).search(text)
    return m.group(2) if m else None


def update_sections(text: str) -> str:
    """`text` (docs/options.md) with every generated section replaced by what the code says."""
    for name, body in readme_sections().items():
        m = _section_re(name).search(text)
        if m is None:
            raise ValueError(f"no generated section {name!r} (BEGIN/END GENERATED markers) found")
        text = text[: m.start()] + m.group(1) + body + "\n" + m.group(3) + text[m.end() :]
    return text
