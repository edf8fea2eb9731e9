"""A mutation fuzzer for the bundled server's `$JS.API`, publish and ack paths, in process.

The invariant, stated as h11 states its own: whatever a client sends, the
server answers with an API error or a protocol status (never the dispatcher's
catch-all "internal error", never an exception escaping into the broker, never
a logged traceback) and keeps serving: after every input `$JS.API.INFO` still
answers. Memory stays bounded: the streams an input creates are deleted every
`CLEANUP_EVERY` inputs, and the count of live streams is checked.

Inputs are valid requests for every route (every field of stream and consumer
configs, purge, get, direct get, pull requests, pause, reset, paging), then
mutated: fields set to values of the wrong type, huge, negative or out of
int64 range, unicode and NUL strings, deep nesting, unknown fields, fields
dropped; or raw bodies (random bytes, truncated JSON, deep nesting). Names in
subjects come from the same pool. Publishes with JetStream headers of random
values and acks with random bodies are mixed in, and the fake clock moves so
that timers (pull expiry, heartbeats, redeliveries, TTLs) fire too.

Run it long (the figure in docs/reliability.md):
    python -m jetstream_testing.fuzz --inputs 1000000 --seed 1
The test suite runs `run(...)` with a few thousand inputs per seed.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jetstream_server.core.clock import FakeClock
from jetstream_server.core.routing import Broker
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings

CLEANUP_EVERY = 500
MAX_STREAMS = 600  # what CLEANUP_EVERY inputs can create, plus the base streams

NAMES = ["S", "T", "C", "D", "ORDERS", "a" * 300, "é", "na\x00me", "*", ">", "a b", "x.y", "ü" * 40]
SUBJECTS = ["s.a", "s.>", "s.*", "t.1", "*", ">", "a..b", "", " ", "s.\x00", "s.é", "s." + "x" * 3000,
            "$JS.API.>", "s.a.>", "t.*.z"]
TIMES = ["2024-01-01T00:00:00Z", "2999-12-31T23:59:59.999999999Z", "yesterday", "0001-01-01T00:00:00Z",
         "2024-13-45T99:99:99Z", ""]


MAX_TURNS = 100_000  # loop turns a request may take before the fuzzer moves on


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 7, 1024, 2**31, 2**32 + 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63),
    -(2**63) - 1, 10**30, -(10**30), 0.5, -0.0, 1e308, 3.0, "", "x", "1", "-1", "\x00", "é", "\ud800",
    "💥" * 50, "a" * 5000, [], [1, 2], ["s.a", "s.b"], [None], {}, {"a": 1}, {"": ""}, _deep(60),
    *SUBJECTS, *TIMES, "limits", "interest", "workqueue", "memory", "file", "old", "new", "explicit",
    "all", "none", "instant", "original", "last_per_subject", "by_start_sequence", "by_start_time",
    "new", "last", "s2", "pinned_client", "overflow",
]

STREAM_CONFIG: dict[str, Any] = {
    "name": "S", "subjects": ["s.>"], "retention": "limits", "max_consumers": -1, "max_msgs": -1,
    "max_bytes": -1, "max_age": 0, "max_msgs_per_subject": -1, "max_msg_size": -1, "discard": "old",
    "storage": "memory", "num_replicas": 1, "duplicate_window": 120_000_000_000, "sealed": False,
    "deny_delete": False, "deny_purge": False, "allow_rollup_hdrs": True, "allow_direct": True,
    "mirror_direct": False, "discard_new_per_subject": False, "first_seq": 1, "metadata": {"k": "v"},
    "description": "d", "placement": {}, "compression": "none", "allow_msg_ttl": True, "subject_delete_marker_ttl": 0, "no_ack": False,
    "consumer_limits": {"inactive_threshold": 0, "max_ack_pending": 0}, "allow_msg_counter": False,
    "allow_atomic": False, "allow_msg_schedules": False,
}
CONSUMER_CONFIG: dict[str, Any] = {
    "durable_name": "C", "name": "C", "description": "d", "deliver_policy": "all", "opt_start_seq": 0,
    "opt_start_time": None, "ack_policy": "explicit", "ack_wait": 30_000_000_000, "max_deliver": -1,
    "backoff": [1_000_000_000], "filter_subject": "s.a", "filter_subjects": [], "replay_policy": "instant",
    "rate_limit_bps": 0, "sample_freq": "", "max_waiting": 512, "max_ack_pending": 1000,
    "flow_control": False, "idle_heartbeat": 0, "headers_only": False, "max_batch": 0, "max_expires": 0,
    "max_bytes": 0, "inactive_threshold": 0, "num_replicas": 0, "mem_storage": False, "metadata": {},
    "deliver_subject": None, "deliver_group": None, "pause_until": None, "priority_policy": "none",
    "priority_groups": [], "priority_timeout": 0,
}

# fields a mutation may add (features this server refuses, and then some)
EXTRA_KEYS = ["subject_transform", "republish", "mirror", "sources", "unknown", "", "é", "\x00"]
EXTRA_VALUES: list[Any] = [{"src": "s.>", "dest": "t.>"}, {"name": "T"}, [{"name": "T"}],
                           {"src": ">", "dest": "{{wildcard(1)}}"}]

# route pattern -> (subject template, body template); {s}, {c}: stream and consumer names
ROUTES: list[tuple[str, dict[str, Any] | None]] = [
    ("$JS.API.INFO", None),
    ("$JS.API.STREAM.CREATE.{s}", STREAM_CONFIG),
    ("$JS.API.STREAM.UPDATE.{s}", STREAM_CONFIG),
    ("$JS.API.STREAM.NAMES", {"offset": 0, "subject": "s.a"}),
    ("$JS.API.STREAM.LIST", {"offset": 0, "subject": "s.a"}),
    ("$JS.API.STREAM.INFO.{s}", {"deleted_details": True, "subjects_filter": ">", "offset": 0}),
    ("$JS.API.STREAM.DELETE.{s}", None),
    ("$JS.API.STREAM.PURGE.{s}", {"filter": "s.a", "seq": 2, "keep": 1}),
    ("$JS.API.STREAM.MSG.GET.{s}", {"seq": 1, "last_by_subj": "s.a", "next_by_subj": "s.>"}),
    ("$JS.API.STREAM.MSG.DELETE.{s}", {"seq": 1, "no_erase": True}),
    ("$JS.API.DIRECT.GET.{s}", {"seq": 1, "last_by_subj": "s.a", "next_by_subj": "s.>", "batch": 3,
                                 "max_bytes": 100, "multi_last": ["s.*"], "up_to_seq": 5,
                                 "up_to_time": TIMES[0], "start_time": TIMES[0]}),
    ("$JS.API.DIRECT.GET.{s}.s.a", None),
    ("$JS.API.CONSUMER.CREATE.{s}", {"stream_name": "S", "config": CONSUMER_CONFIG, "action": ""}),
    ("$JS.API.CONSUMER.CREATE.{s}.{c}", {"stream_name": "S", "config": CONSUMER_CONFIG, "action": "create"}),
    ("$JS.API.CONSUMER.CREATE.{s}.{c}.s.a", {"stream_name": "S", "config": CONSUMER_CONFIG}),
    ("$JS.API.CONSUMER.DURABLE.CREATE.{s}.{c}", {"stream_name": "S", "config": CONSUMER_CONFIG}),
    ("$JS.API.CONSUMER.NAMES.{s}", {"offset": 0, "subject": "s.a"}),
    ("$JS.API.CONSUMER.LIST.{s}", {"offset": 0}),
    ("$JS.API.CONSUMER.INFO.{s}.{c}", None),
    ("$JS.API.CONSUMER.DELETE.{s}.{c}", None),
    ("$JS.API.CONSUMER.PAUSE.{s}.{c}", {"pause_until": TIMES[1]}),
    ("$JS.API.CONSUMER.RESET.{s}.{c}", {"seq": 1}),
    ("$JS.API.CONSUMER.MSG.NEXT.{s}.{c}", {"batch": 2, "expires": 1_000_000_000, "max_bytes": 0,
                                            "no_wait": False, "idle_heartbeat": 100_000_000}),
]
JS_HEADERS = ["Nats-Msg-Id", "Nats-Expected-Stream", "Nats-Expected-Last-Sequence",
              "Nats-Expected-Last-Subject-Sequence", "Nats-Expected-Last-Subject-Sequence-Subject",
              "Nats-Expected-Last-Msg-Id", "Nats-Rollup", "Nats-TTL", "Nats-Marker-Reason",
              "Nats-Incr", "Nats-Required-Api-Level"]
HEADER_VALUES = ["1", "0", "-1", "18446744073709551616", "sub", "all", "s.*", "1s", "forever", "x" * 300,
                 "", "é", "S", "+5", "9" * 40]
ACK_BODIES = [b"", b"+ACK", b"-NAK", b'-NAK {"delay": 1000000}', b"-NAK {\"delay\": 1e400}", b"+WPI",
              b"+TERM", b"+NXT", b'+NXT {"batch": 2}', b"+NXT 99999999999999999999999", b"\xff\xfe",
              b"-NAK " + b"[" * 5000]


@dataclass
class Failure:
    subject: str
    body: bytes
    problem: str


@dataclass
class Report:
    inputs: int = 0
    replies: int = 0
    errors: int = 0
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    max_rss_mb: float = 0.0


class _ErrorLog(logging.Handler):
    """Collects log records at ERROR and above (a traceback for a client's mistake)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """`value` with one field (at any depth) replaced, dropped or added."""
    if isinstance(value, dict) and value and depth < 3 and rng.random() < 0.8:
        out = dict(value)
        key = rng.choice(list(out))
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.25:
            out[rng.choice([*EXTRA_KEYS, key.upper()])] = rng.choice(VALUES + EXTRA_VALUES)
        elif roll < 0.5 and isinstance(out[key], (dict, list)):
            out[key] = mutate(rng, out[key], depth + 1)
        else:
            out[key] = rng.choice(VALUES)
        return out
    if isinstance(value, list) and value and rng.random() < 0.5:
        out_list = list(value)
        out_list[rng.randrange(len(out_list))] = rng.choice(VALUES)
        return out_list
    return rng.choice(VALUES)


def raw_body(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.3:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
    if roll < 0.5:
        return b"[" * rng.randrange(900, 30000)
    if roll < 0.7:
        text = json.dumps(STREAM_CONFIG).encode()
        return text[: rng.randrange(len(text))]
    if roll < 0.85:
        return rng.choice([b"null", b"1", b"\"s\"", b"[]", b"{}", b"true", b"1e400", b"-0", b"NaN"])
    return b'{"name": "S", "subjects": [' + b",".join(b'"s.%d"' % i for i in range(3000)) + b"]}"


def random_request(rng: random.Random) -> tuple[str, bytes]:
    """One `$JS.API` request: a route's valid body mutated, or a raw body."""
    pattern, template = rng.choice(ROUTES)
    stream = "S" if rng.random() < 0.6 else rng.choice(NAMES)
    consumer = "C" if rng.random() < 0.5 else rng.choice(NAMES)
    subject = pattern.replace("{s}", stream).replace("{c}", consumer)
    if rng.random() < 0.15:
        return subject, raw_body(rng)
    value: Any = template if template is not None else {}
    for _ in range(rng.randrange(0, 4)):
        value = mutate(rng, value)
    if isinstance(value, dict) and "name" in value and rng.random() < 0.7:
        value = dict(value, name=subject.rsplit(".", 1)[-1])
    try:
        return subject, json.dumps(value).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return subject, b"{}"


class Fuzzer:
    """One engine on a broker and a fake clock; `one()` sends one input and checks it."""

    def __init__(self, seed: int, store_dir: str | None) -> None:
        self.rng = random.Random(seed)
        self.clock = FakeClock()
        self.broker = Broker()
        self.engine = JetStream(EngineSettings(store_dir=store_dir), self.clock)
        self.engine.start(self.broker)
        self.replies: list[tuple[bytes | None, bytes]] = []
        self.broker.subscribe("_R.>", lambda s, r, h, p: self.replies.append((h, p)))
        self.report = Report()
        self.last_input: tuple[str, bytes] = ("", b"")
        self._base()

    def _base(self) -> None:
        for name, subjects in (("S", ["s.>"]), ("T", ["t.>"])):
            if name in self.engine.streams:
                continue
            body = dict(STREAM_CONFIG, name=name, subjects=subjects)
            self.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(body).encode())
        body = {"stream_name": "S", "config": dict(CONSUMER_CONFIG, filter_subject="")}
        self.request("$JS.API.CONSUMER.CREATE.S.C", json.dumps(body).encode())
        for i in range(20):
            self.broker.publish(f"s.{i % 4}", None, None, b"m%d" % i)

    def request(self, subject: str, body: bytes, headers: bytes | None = None) -> list[tuple[bytes | None, bytes]]:
        self.last_input = (subject, (headers or b"") + body)
        self.replies = []
        self.broker.publish(subject, "_R.1", headers, body)
        for _ in range(MAX_TURNS):  # a request in steps (a large create) goes on over loop turns
            if not self.clock.turn():
                break
        return self.replies

    def one(self) -> None:
        rng = self.rng
        if "S" not in self.engine.streams or "T" not in self.engine.streams:
            self._base()  # an input deleted them: the next ones need something to work on
        roll = rng.random()
        if roll < 0.1:
            self._publish()
        elif roll < 0.15:
            self._ack()
        else:
            self._api()
        if rng.random() < 0.05:
            self.clock.advance(rng.choice([0.001, 0.1, 1.0, 31.0, 3600.0]))
        self.report.inputs += 1

    def _api(self) -> None:
        subject, body = random_request(self.rng)
        self._check(subject, body, self.request(subject, body))

    def _publish(self) -> None:
        rng = self.rng
        lines = [f"{rng.choice(JS_HEADERS)}: {rng.choice(HEADER_VALUES)}" for _ in range(rng.randrange(1, 4))]
        headers = ("NATS/1.0\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogatepass")
        subject = rng.choice(["s.a", "s.b", "s.é", "t.1", "s." + "x" * 200])
        self._check(subject, b"p", self.request(subject, b"p", headers))

    def _ack(self) -> None:
        rng = self.rng
        seq, dseq = rng.choice([(1, 1), (2, 2), (2**63, 1), (0, 0)])
        subject = f"$JS.ACK.S.C.1.{seq}.{dseq}.1700000000000000000.0"
        if rng.random() < 0.2:
            subject = rng.choice(["$JS.ACK.S.C", "$JS.ACK.S.C.x.y.z.w.v.u", "$JS.ACK." + "a." * 20 + "b"])
        self.broker.publish(subject, "_R.1", None, rng.choice(ACK_BODIES))

    def _check(self, subject: str, body: bytes, replies: list[tuple[bytes | None, bytes]]) -> None:
        report = self.report
        for headers, payload in replies:
            report.replies += 1
            if headers is not None or not payload.startswith(b"{"):
                continue  # a status (pull, direct get) or a message
            try:
                answer = json.loads(payload)
            except ValueError:
                report.failures.append(Failure(subject, body, f"reply is not JSON: {payload[:200]!r}"))
                continue
            error = answer.get("error")
            if error is None:
                continue
            report.errors += 1
            if str(error.get("description", "")).startswith("internal error"):
                report.failures.append(Failure(subject, body, f"internal error: {error}"))

    def still_serving(self) -> bool:
        replies = self.request("$JS.API.INFO", b"")
        return len(replies) == 1 and b"account_info_response" in replies[0][1]

    def cleanup(self) -> None:
        for name in list(self.engine.streams):
            if name in ("S", "T"):
                self.request(f"$JS.API.STREAM.PURGE.{name}", b"")  # bounded, still there
            else:
                self.request(f"$JS.API.STREAM.DELETE.{name}", b"")
        if len(self.engine.streams) > MAX_STREAMS:
            self.report.failures.append(Failure("", b"", f"{len(self.engine.streams)} streams left"))


def run(inputs: int, seed: int, *, store_dir: str | None = None,
        progress: Callable[[Report], None] | None = None) -> Report:
    """Fuzz `inputs` inputs from `seed`; the report lists every broken invariant."""
    errors = _ErrorLog()
    server_log = logging.getLogger("jetstream_server")
    server_log.addHandler(errors)
    previous = server_log.level
    server_log.setLevel(logging.WARNING)
    logging.getLogger("jetstream_server").propagate = False
    start = time.monotonic()
    try:
        fuzzer = Fuzzer(seed, store_dir)
        report = fuzzer.report
        while report.inputs < inputs:
            before = len(errors.records)
            try:
                fuzzer.one()
            except Exception as exc:  # the invariant broken: recorded, the run goes on
                report.failures.append(Failure("", b"", f"exception escaped: {exc!r}"))
            if len(errors.records) > before:
                for record in errors.records[before:]:
                    cause = f" ({record.exc_info[1]!r})" if record.exc_info else ""
                    last = fuzzer.last_input
                    report.failures.append(
                        Failure(last[0], last[1], f"logged error: {record.getMessage()}{cause}")
                    )
            if report.inputs % CLEANUP_EVERY == 0:
                fuzzer.cleanup()
                if not fuzzer.still_serving():
                    report.failures.append(Failure("$JS.API.INFO", b"", "no answer"))
                if progress is not None:
                    progress(report)
            if len(report.failures) > 50:
                break
        fuzzer.cleanup()
    finally:
        server_log.removeHandler(errors)
        server_log.setLevel(previous)
        logging.getLogger("jetstream_server").propagate = True
    report.seconds = time.monotonic() - start
    report.max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jetstream_testing.fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--file-store", action="store_true", help="streams may use a temporary store directory")
    args = parser.parse_args(argv)

    def progress(report: Report) -> None:
        if report.inputs % 50_000 == 0:
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{report.inputs} inputs, {len(report.failures)} failures, max RSS {rss:.0f} MB", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        report = run(args.inputs, args.seed, store_dir=tmp if args.file_store else None, progress=progress)
    for failure in report.failures[:20]:
        print(f"FAIL {failure.subject!r} {failure.body[:200]!r}: {failure.problem}")
    print(f"seed {args.seed}: {report.inputs} inputs, {report.replies} replies ({report.errors} API errors), "
          f"{len(report.failures)} failures, {report.seconds:.0f} s, max RSS {report.max_rss_mb:.0f} MB")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
