"""The hostile-client suite: the most expensive input a client may legally send, per
operation, while another client measures the server's round trip.

Each `Scenario` runs against a fresh server process (the bundled server or
nats-server, the same generated config: default limits, or raised ones where
the scenario says so). While it runs, a `Probe` client on its own thread sends
PING and times each PONG; the worst round trip is how long the server held every
other client. After the scenario, the server's resident memory is read from
/proc. For the bundled server (its event loop is the process's main thread) the
probe also reads that thread's CPU time (/proc/<pid>/schedstat) around each round
trip: the most CPU the loop spent while one PING waited is the stall a quiet
machine would show (on a loaded one the wall-clock figure is inflated by the time
the server waited for a core; a loop blocked on I/O, not on the CPU, shows only
in the wall-clock figure). `run_suite` returns one `Figure` per scenario and server, and
`format_table` prints them; nothing here asserts a time: the command reports,
the test suite (tests/jobs) checks only that every scenario runs and what each
outcome is.

Everything speaks the text protocol over blocking loopback sockets (no client
library): `Raw` is a connection that can publish, subscribe and ask the
`$JS.API` (a request is a PUB with a reply inbox, its answer the next MSG).
Sizes come from `Sizes` (`FULL` for the figures in docs/hostile-clients.md,
`QUICK` for the test that keeps the command from rotting).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jetstream_testing.process import ServerProcess, start_server, write_config

RAISED_LIMITS: Final = "max_control_line: 2MB\nmax_payload: 8MB\nmax_pending: 64MB\n"
PROBE_INTERVAL_S: Final = 0.002
READ_TIMEOUT_S: Final = 60.0


@dataclass(frozen=True)
class Sizes:
    long_subject_bytes: int  # a SUB's subject (raised max_control_line)
    subs_on_one_connection: int
    connections: int
    slow_consumer_bytes: int
    stream_messages: int
    stream_subjects: int
    create_subjects: int
    filter_subjects: int
    streams: int  # created one after another (memory streams)


FULL: Final = Sizes(1 << 20, 200_000, 2_000, 64 << 20, 50_000, 50_000, 10_000, 1_000, 2_000)
QUICK: Final = Sizes(64 << 10, 5_000, 100, 4 << 20, 2_000, 2_000, 500, 100, 100)


@dataclass(frozen=True)
class Figure:
    scenario: str
    server: str
    worst_rtt_ms: float  # the probe's longest PING round trip while the scenario ran
    median_rtt_ms: float
    loop_cpu_ms: float | None  # the most loop CPU time within one round trip (bundled only)
    rss_mib: float  # the server's resident memory right after the scenario
    outcome: str  # what the hostile client saw (refused, answered, closed...)


class Raw:
    """A blocking text-protocol connection."""

    def __init__(self, port: int, connect: dict[str, Any] | None = None, timeout: float = READ_TIMEOUT_S) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        # a request is two writes, then a wait: without this, Nagle holds the second
        # until the server's delayed ack (40 ms a request)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.info = json.loads(self.line()[5:])
        opts = {"verbose": False, "pedantic": False, "headers": True, "protocol": 1, **(connect or {})}
        self.send(b"CONNECT " + json.dumps(opts).encode() + b"\r\n")
        self.inbox_n = 0

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"closed after {self.buf[-200:]!r}")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def ping(self) -> list[bytes]:
        """PING; the lines before its PONG (payloads of MSGs included)."""
        self.send(b"PING\r\n")
        lines = []
        while (line := self.line()) != b"PONG":
            lines.append(line)
        return lines

    def request(self, subject: str, body: bytes | dict[str, Any] = b"") -> dict[str, Any]:
        """A `$JS.API` request; its JSON answer."""
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.inbox_n += 1
        inbox = f"_INBOX.hostile.{self.inbox_n}"
        self.send(f"SUB {inbox} {inbox}\r\nPUB {subject} {inbox} {len(payload)}\r\n".encode() + payload + b"\r\n")
        while True:
            line = self.line()
            if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
                parts = line.split()
                size = int(parts[-1])
                data = self.exact(size + 2)[:-2]
                status = ""
                if line.startswith(b"HMSG "):
                    head, data = data[: int(parts[-2])], data[int(parts[-2]):]
                    status = head.split(b"\r\n", 1)[0][len(b"NATS/1.0"):].strip().decode()
                self.send(f"UNSUB {inbox}\r\n".encode())
                if not data:
                    return {"status": status} if status else {}
                return json.loads(data)
            if line.startswith(b"-ERR"):
                raise ConnectionError(line.decode())

    def close(self) -> None:
        self.sock.close()


def thread_cpu_ns(pid: int) -> int:
    """CPU time of the main thread of process `pid` (the first field of its schedstat)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


class Probe:
    """Another client: PING, wait for PONG, again, on its own thread. With
    `loop_pid`, also the CPU time that process's main thread spent in each round trip."""

    def __init__(self, port: int, loop_pid: int | None = None) -> None:
        self.raw = Raw(port)
        self.raw.ping()
        self.loop_pid = loop_pid
        self.rtts: list[float] = []
        self.cpu_ns: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        pid = self.loop_pid
        while not self._stop.is_set():
            try:
                cpu = thread_cpu_ns(pid) if pid is not None else 0
                start = time.perf_counter()
                self.raw.ping()
                self.rtts.append(time.perf_counter() - start)
                if pid is not None:
                    self.cpu_ns.append(thread_cpu_ns(pid) - cpu)
            except OSError:
                return
            time.sleep(PROBE_INTERVAL_S)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(READ_TIMEOUT_S)
        self.raw.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- scenarios ----------------------------------------------------------------------------

Setup = Callable[[int, Sizes], Any]
Attack = Callable[[int, Sizes, Any], str]


@dataclass(frozen=True)
class Scenario:
    name: str
    attack: Attack
    setup: Setup | None = None  # work before the probe starts (filling a stream)
    raised: bool = False  # RAISED_LIMITS in the config


def _stays_connected(raw: Raw) -> str:
    try:
        lines = raw.ping()
    except OSError as exc:
        return f"closed ({exc})"[:80]
    errs = [line.decode() for line in lines if line.startswith(b"-ERR")]
    return f"answered {errs[0]}" if errs else "applied, connection open"


def long_literal_sub(port: int, sizes: Sizes, _: Any) -> str:
    raw = Raw(port)
    subject = ".".join(["abcdefg"] * (sizes.long_subject_bytes // 8))
    raw.send(f"SUB {subject} 1\r\n".encode())
    return _stays_connected(raw)


def long_wildcard_sub(port: int, sizes: Sizes, _: Any) -> str:
    raw = Raw(port)
    subject = ".".join(["*"] * (sizes.long_subject_bytes // 2 - 1)) + ".>"
    raw.send(f"SUB {subject} 1\r\n".encode())
    return _stays_connected(raw)


def read_of_deep_subs(port: int, sizes: Sizes, _: Any) -> str:
    """256 KiB in one write: SUBs of 4 KB subjects (2,000 tokens) at the default limits."""
    raw = Raw(port)
    ops = []
    for i in range(64):
        subject = ".".join(["a", "*"] * 999) + f".{i}"
        ops.append(f"SUB {subject} {i}\r\n".encode())
    raw.send(b"".join(ops))
    return _stays_connected(raw)


@contextmanager
def _many_subs(port: int, count: int) -> Iterator[Raw]:
    raw = Raw(port)
    batch = 10_000
    for start in range(0, count, batch):
        raw.send(b"".join(b"SUB storm.%d.x %d\r\n" % (i, i) for i in range(start, min(count, start + batch))))
    yield raw


def subscription_storm(port: int, sizes: Sizes, _: Any) -> str:
    with _many_subs(port, sizes.subs_on_one_connection) as raw:
        return _stays_connected(raw)


def storm_setup(port: int, sizes: Sizes) -> Raw:
    with _many_subs(port, sizes.subs_on_one_connection) as raw:
        raw.ping()
        return raw


def close_storm_connection(port: int, sizes: Sizes, raw: Raw) -> str:
    raw.close()
    other = Raw(port)
    deadline = time.monotonic() + READ_TIMEOUT_S
    while time.monotonic() < deadline:  # the close is done once others see no interest
        other.send(b"SUB storm.1.x 1\r\nPUB storm.1.x 1\r\nx\r\n")
        lines = other.ping()
        other.send(b"UNSUB 1\r\n")
        if lines == [b"MSG storm.1.x 1 1", b"x"]:
            return "closed; its subscriptions gone"
    return "closed"


def connection_storm(port: int, sizes: Sizes, _: Any) -> str:
    start = time.perf_counter()
    socks: list[socket.socket] = []
    errors = 0
    lock = threading.Lock()

    def open_some(n: int) -> None:
        nonlocal errors
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT_S)
                s.recv(4096)  # INFO
            except OSError:
                with lock:
                    errors += 1
                continue
            with lock:
                socks.append(s)

    threads = [threading.Thread(target=open_some, args=(sizes.connections // 20,)) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    for s in socks:
        s.close()
    return f"{len(socks)} connected in {took:.2f} s, {errors} failed"


def slow_consumer(port: int, sizes: Sizes, _: Any) -> str:
    reader = Raw(port)
    reader.send(b"SUB slow.> 1\r\n")
    reader.ping()
    writer = Raw(port)
    chunk = b"PUB slow.x 65536\r\n" + b"x" * 65536 + b"\r\n"
    for _ in range(sizes.slow_consumer_bytes // 65536):
        writer.send(chunk)
    writer.ping()
    # the reader never read: it is closed as a slow consumer (or still buffered)
    reader.sock.settimeout(2)
    try:
        data = reader.sock.recv(1 << 16)
        while data and b"Slow Consumer" not in data:
            data = reader.sock.recv(1 << 16)
        return "reader closed: Slow Consumer" if data else "reader closed"
    except (TimeoutError, OSError):
        return "reader still open"


def oversized_and_malformed(port: int, sizes: Sizes, _: Any) -> str:
    outcomes = []
    for frame in (
        b"PUB big 2000000\r\n",
        b"SUB " + b"x" * 10_000 + b" 1\r\n",
        b"HPUB h 100 10\r\n" + b"x" * 10 + b"\r\n",
        b"\x00\xff" * (1 << 17),
        b"PUB a 5\r\nabcdefghij\r\n",
    ):
        raw = Raw(port)
        raw.send(frame + b"PING\r\n")
        try:
            line = raw.line()
            outcomes.append(line.decode(errors="replace")[:40])
        except OSError:
            outcomes.append("closed")
        raw.close()
    return "; ".join(outcomes)


def _fill_stream(port: int, sizes: Sizes, *, subjects: int) -> Raw:
    raw = Raw(port)
    made = raw.request("$JS.API.STREAM.CREATE.H", {
        "name": "H", "subjects": ["h.>"], "allow_direct": True, "storage": "memory"})
    assert "error" not in made, made
    batch = 2_000
    payload = b"x" * 512
    for start in range(0, sizes.stream_messages, batch):
        raw.send(b"".join(
            b"PUB h.%d %d\r\n%s\r\n" % (i % subjects, len(payload), payload)
            for i in range(start, min(sizes.stream_messages, start + batch))))
        raw.ping()
    return raw


def filled(port: int, sizes: Sizes) -> Raw:
    return _fill_stream(port, sizes, subjects=sizes.stream_subjects)


def api_scenario(subject: str, body: Callable[[Sizes], dict[str, Any] | bytes]) -> Attack:
    def attack(port: int, sizes: Sizes, raw: Raw | None) -> str:
        answer = (raw or Raw(port)).request(subject, body(sizes))
        error = answer.get("error")
        if error:
            return f"error {error.get('code')} {error.get('err_code')} {error.get('description', '')[:40]}"
        return f"status {answer['status']}" if answer.get("status") else "answered"
    attack.__name__ = subject
    return attack


def _count_until_status(raw: Raw, subject: str, body: bytes) -> str:
    """Ask `subject`; count the messages answered until the status that ends them."""
    inbox = "_INBOX.batch"
    raw.send(f"SUB {inbox} 7\r\nPUB {subject} {inbox} {len(body)}\r\n".encode() + body + b"\r\n")
    count = 0
    while True:
        line = raw.line()
        if line.startswith(b"-ERR"):
            return f"closed: {line.decode()}"
        if not (line.startswith(b"MSG") or line.startswith(b"HMSG")):
            continue
        parts = line.split()
        block = raw.exact(int(parts[-1]) + 2)
        if line.startswith(b"HMSG") and block.startswith(b"NATS/1.0 "):
            status = block[9:block.index(b"\r\n")].decode(errors="replace").strip()
            return f"{count} messages, then {status}"
        count += 1


def direct_batch(port: int, sizes: Sizes, raw: Raw) -> str:
    return _count_until_status(raw, "$JS.API.DIRECT.GET.H", b'{"seq":1,"batch":1000000}')


def pull_batch(port: int, sizes: Sizes, raw: Raw) -> str:
    made = raw.request("$JS.API.CONSUMER.CREATE.H.P", {"stream_name": "H", "config": {
        "durable_name": "P", "ack_policy": "none"}})
    assert "error" not in made, made
    return _count_until_status(raw, "$JS.API.CONSUMER.MSG.NEXT.H.P", b'{"batch":1000000,"no_wait":true}')


def many_streams(port: int, sizes: Sizes, _: Any) -> str:
    """Create `sizes.streams` memory streams one after another: does a create cost
    more when many streams exist? The mean of the first and of the last tenth."""
    raw = Raw(port)
    took: list[float] = []
    for i in range(sizes.streams):
        start = time.perf_counter()
        made = raw.request(f"$JS.API.STREAM.CREATE.MS{i}", {
            "name": f"MS{i}", "subjects": [f"ms{i}.>"], "storage": "memory"})
        took.append(time.perf_counter() - start)
        if "error" in made:
            return f"stream {i}: error {made['error'].get('err_code')}"
    tenth = max(1, len(took) // 10)
    first, last = statistics.mean(took[:tenth]) * 1000, statistics.mean(took[-tenth:]) * 1000
    return f"{first:.1f} ms per create for the first {tenth}, {last:.1f} ms for the last {tenth}"


def permission_tricks(port: int, sizes: Sizes, _: Any) -> str:
    """Each trick: refused (-ERR) or not."""
    results = []
    for name, frame in (
        ("ack reply", b"PUB x $JS.ACK.S.C.1.1.1.1.0 0\r\n\r\n"),
        ("import reply", b"PUB x _R_.abc.1 0\r\n\r\n"),
        ("gateway reply", b"PUB x _GR_.c.s.1 0\r\n\r\n"),
        ("queue _sys_", b"SUB x _sys_ 1\r\n"),
        ("$NRG publish", b"PUB $NRG.AE.g 0\r\n\r\n"),
    ):
        raw = Raw(port)
        raw.send(frame)
        lines = raw.ping()
        results.append(f"{name} {'refused' if any(line.startswith(b'-ERR') for line in lines) else 'ACCEPTED'}")
        raw.close()
    raw = Raw(port)
    raw.send(b"SUB _INBOX.sys 1\r\nPUB $SYS.REQ.SERVER.PING _INBOX.sys 0\r\n\r\n")
    answered = any(line.startswith(b"MSG") for line in raw.ping())
    results.append(f"$SYS request {'ANSWERED' if answered else 'unanswered'}")
    raw.close()
    return ", ".join(results)


SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario("SUB of a 1 MB literal subject", long_literal_sub, raised=True),
    Scenario("SUB of a 1 MB wildcard subject (512k tokens)", long_wildcard_sub, raised=True),
    Scenario("256 KiB of 4 KB SUBs (2,000 tokens each)", read_of_deep_subs),
    Scenario("200,000 SUBs on one connection", subscription_storm),
    Scenario("closing a connection with 200,000 SUBs", close_storm_connection, setup=storm_setup),
    Scenario("2,000 connections at once", connection_storm),
    Scenario("slow consumer (64 MB never read)", slow_consumer),
    Scenario("oversized and malformed frames", oversized_and_malformed),
    Scenario("permission tricks", permission_tricks),
    Scenario("DIRECT.GET batch 1,000,000 over max_pending", direct_batch, setup=filled),
    Scenario("CONSUMER.MSG.NEXT batch 1,000,000", pull_batch, setup=filled),
    Scenario("STREAM.INFO subjects_filter > (every subject)",
             api_scenario("$JS.API.STREAM.INFO.H", lambda s: {"subjects_filter": ">"}), setup=filled),
    Scenario("STREAM.MSG.GET last_by_subj > (wildcard)",
             api_scenario("$JS.API.STREAM.MSG.GET.H", lambda s: {"last_by_subj": ">"}), setup=filled),
    Scenario("DIRECT.GET multi_last > (over 1024 subjects)",
             api_scenario("$JS.API.DIRECT.GET.H", lambda s: {"multi_last": [">"]}), setup=filled),
    Scenario("CONSUMER.CREATE with 1,000 filter subjects",
             api_scenario("$JS.API.CONSUMER.CREATE.H.F", lambda s: {"stream_name": "H", "config": {
                 "durable_name": "F", "filter_subjects": [f"h.{i}" for i in range(s.filter_subjects)]}}),
             setup=filled),
    Scenario("STREAM.PURGE of the whole stream",
             api_scenario("$JS.API.STREAM.PURGE.H", lambda s: {}), setup=filled),
    Scenario("STREAM.DELETE of a full stream",
             api_scenario("$JS.API.STREAM.DELETE.H", lambda s: b""), setup=filled),
    Scenario("STREAM.CREATE with 10,000 subjects",
             api_scenario("$JS.API.STREAM.CREATE.M", lambda s: {
                 "name": "M", "subjects": [f"m.{i}.>" for i in range(s.create_subjects)]})),
    Scenario("2,000 stream creates, one after another", many_streams),
    Scenario("STREAM.SNAPSHOT of a full stream",
             api_scenario("$JS.API.STREAM.SNAPSHOT.H", lambda s: {"deliver_subject": "_INBOX.snap"}),
             setup=filled),
)


def run_scenario(kind: str, scenario: Scenario, sizes: Sizes, workdir: Path) -> Figure:
    base = Path(tempfile.mkdtemp(dir=workdir))
    config = write_config(base / "server.conf", (RAISED_LIMITS if scenario.raised else "") + "jetstream {}\n")
    server: ServerProcess = start_server(kind, base / "store", config=config)
    try:
        assert server.proc is not None
        state = scenario.setup(server.port, sizes) if scenario.setup is not None else None
        with Probe(server.port, server.proc.pid if kind == "bundled" else None) as probe:
            try:
                outcome = scenario.attack(server.port, sizes, state)
            except (OSError, AssertionError, ValueError) as exc:
                outcome = f"failed: {type(exc).__name__} {exc}"[:100]
            time.sleep(0.2)  # a close's work may come after the attacker's last answer
        rss = rss_mib(server.proc.pid) if server.running else 0.0
        rtts = probe.rtts or [0.0]
        loop_cpu = max(probe.cpu_ns, default=0) / 1e6 if kind == "bundled" else None
        return Figure(scenario.name, kind, max(rtts) * 1000, statistics.median(rtts) * 1000, loop_cpu,
                      rss, outcome)
    finally:
        server.stop()


def run_suite(kinds: list[str], sizes: Sizes, only: str | None = None,
              report: Callable[[Figure], None] | None = None) -> list[Figure]:
    figures = []
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        for scenario in SCENARIOS:
            if only and only.lower() not in scenario.name.lower():
                continue
            for kind in kinds:
                figure = run_scenario(kind, scenario, sizes, Path(tmp))
                figures.append(figure)
                if report is not None:
                    report(figure)
    return figures


def format_table(figures: list[Figure]) -> str:
    """A Markdown table: scenario, server, worst and median probe round trip, the worst
    loop CPU in one round trip (bundled only), RSS, outcome."""
    lines = ["| scenario | server | worst stall (ms) | median RTT (ms) | worst loop CPU (ms) "
             "| RSS after (MiB) | outcome |",
             "|---|---|---:|---:|---:|---:|---|"]
    for f in figures:
        cpu = "-" if f.loop_cpu_ms is None else f"{f.loop_cpu_ms:.0f}"
        lines.append(f"| {f.scenario} | {f.server} | {f.worst_rtt_ms:.0f} | {f.median_rtt_ms:.1f} "
                     f"| {cpu} | {f.rss_mib:.0f} | {f.outcome.replace('|', '/')} |")
    return os.linesep.join(lines)
