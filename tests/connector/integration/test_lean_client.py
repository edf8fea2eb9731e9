"""The lean executor-side client (client/frames.py, client/connection.py) and the range fetch
of the read path (read/fetch.py): pure frame parsing, then real sockets on both servers."""

from __future__ import annotations

import random
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from api_proxy import ApiProxy
from read_helpers import fill
from server_kinds import SERVER_KINDS
from sink_helpers import connect, create_stream, publish_acked

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.client import (
    ConnectionLostError,
    JetStreamApiError,
    JetStreamUnavailableError,
    LeanConnection,
    NatsError,
    NatsTimeoutError,
    NoRespondersError,
)
from spark_jetstream.client.frames import encode_headers, parse_frames, parse_headers
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.read.fetch import FetchSpec, fetch_range, fetch_range_by_get, subject_matches

WIRE = (
    b"INFO {\"server_id\":\"x\",\"headers\":true}\r\n"
    b"PING\r\n"
    b"MSG a.b 1 5\r\nhello\r\n"
    b"MSG a.c 2 _INBOX.r 0\r\n\r\n"
    b"HMSG a.d 3 $JS.ACK.S.c.1.7.7.1700000000000000000.0 24 27\r\nNATS/1.0\r\nK: v\r\nK: w\r\n\r\nabc\r\n"
    b"+OK\r\n"
    b"PONG\r\n"
    b"-ERR 'Unknown Protocol Operation'\r\n"
)
EXPECTED = [
    (b"INFO", b"", b"", b"", b"", b"{\"server_id\":\"x\",\"headers\":true}"),
    (b"PING", b"", b"", b"", b"", b""),
    (b"MSG", b"a.b", b"1", b"", b"", b"hello"),
    (b"MSG", b"a.c", b"2", b"_INBOX.r", b"", b""),
    (b"MSG", b"a.d", b"3", b"$JS.ACK.S.c.1.7.7.1700000000000000000.0", b"NATS/1.0\r\nK: v\r\nK: w\r\n\r\n", b"abc"),
    (b"+OK", b"", b"", b"", b"", b""),
    (b"PONG", b"", b"", b"", b"", b""),
    (b"-ERR", b"", b"", b"", b"", b"'Unknown Protocol Operation'"),
]


def test_parse_frames_whole() -> None:
    frames, pos = parse_frames(WIRE)
    assert frames == EXPECTED
    assert pos == len(WIRE)


def test_parse_frames_one_byte_at_a_time() -> None:
    buf, pos, frames = b"", 0, []
    for i in range(len(WIRE)):
        buf = buf[pos:] + WIRE[i : i + 1]
        got, pos = parse_frames(buf)
        frames += got
    assert frames == EXPECTED


def test_parse_frames_rejects_garbage() -> None:
    with pytest.raises(NatsError, match="unexpected protocol line"):
        parse_frames(b"HELLO there\r\n")


def test_headers() -> None:
    assert parse_headers(b"NATS/1.0 404 No Messages\r\n\r\n") == (404, "No Messages", [])
    assert parse_headers(b"NATS/1.0 100 FlowControl Request\r\n\r\n")[:2] == (100, "FlowControl Request")
    block = encode_headers([("A", "1"), ("A", "2"), ("B", "x: y")])
    assert parse_headers(block) == (None, "", [("A", "1"), ("A", "2"), ("B", "x: y")])
    with pytest.raises(NatsError, match="bad header block"):
        parse_headers(b"HTTP/1.1 200\r\n\r\n")


def test_subject_matches() -> None:
    assert subject_matches("a.*", "a.b") and not subject_matches("a.*", "a.b.c")
    assert subject_matches("a.>", "a.b.c") and not subject_matches("a.>", "a")
    assert subject_matches("a.b", "a.b") and not subject_matches("a.b", "a.c")


def _conn(server: ServerProcess) -> LeanConnection:
    return LeanConnection.connect(ConnectionOptions.from_options({"servers": server.url}))


async def test_requests_and_api_errors(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    with _conn(server) as conn:
        assert conn.info is not None and conn.info.headers
        conn.flush()
        with pytest.raises(NoRespondersError, match="no responders for nobody.home"):
            conn.request("nobody.home", b"", timeout=5)
        with pytest.raises(JetStreamApiError, match="stream not found") as err:
            conn.js_api("STREAM.INFO.MISSING")
        assert err.value.err_code == 10059 and err.value.code == 404
        account = conn.js_api("INFO")
        assert "api" in account or "limits" in account


async def test_fetch_range_exact_filtered_with_headers(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(
        js,
        "S",
        [(f"s.{'a' if i % 2 else 'b'}", f"{i}".encode(), {"H": str(i)} if i == 3 else None) for i in range(1, 21)],
        subjects=["s.>"],
    )
    with _conn(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("S", 2, 11, ("s.a",), chunk_rows=2)))
        assert [len(c) for c in chunks] == [2, 2, 1]
        seqs = [s for c in chunks for s in c.seqs]
        assert seqs == [3, 5, 7, 9, 11]
        assert [d for c in chunks for d in c.data] == [b"3", b"5", b"7", b"9", b"11"]
        hdrs = [h for c in chunks for h in (c.headers or [])]
        assert parse_headers(hdrs[0])[2] == [("H", "3")] and hdrs[1:] == [b""] * 4
        ts = [t for c in chunks for t in c.ts_ns]
        assert ts == sorted(ts) and ts[0] > 1_600_000_000 * 10**9
        # the same spec twice reads the same rows (a retried task)
        again = [s for c in fetch_range(conn, FetchSpec("S", 2, 11, ("s.a",))) for s in c.seqs]
        assert again == seqs
        # several filters, no headers kept, range past the end of the stream
        multi = list(fetch_range(conn, FetchSpec("S", 15, 100, ("s.a", "s.b"), with_headers=False)))
        assert [s for c in multi for s in c.seqs] == [16, 17, 18, 19, 20]
        assert all(c.headers is None for c in multi)
        assert list(fetch_range(conn, FetchSpec("S", 20, 30))) == []
        assert list(fetch_range(conn, FetchSpec("S", 5, 5))) == []
        # ephemeral read consumers are deleted afterwards
        assert conn.js_api("CONSUMER.NAMES.S").get("consumers") in ([], None)


async def test_fetch_large_range_in_chunks(server: ServerProcess, nc, js) -> None:  # type: ignore[no-untyped-def]
    await js.add_stream(name="BIG", subjects=["big"])
    payload = b"z" * 100
    for _ in range(20_000):
        await nc.publish("big", payload)
    await nc.flush()
    info = await js.stream_info("BIG")
    total = info.state.last_seq
    with _conn(server) as conn:
        spec = FetchSpec("BIG", 0, total, avg_msg_bytes=100)
        seqs = [s for c in fetch_range(conn, spec) for s in c.seqs]
        assert seqs == list(range(1, total + 1))
        # an average that overstates the size: ~80 messages per request, each request
        # ended by its count (nats-server then also sends "409 Batch Completed")
        small = FetchSpec("BIG", 0, total, avg_msg_bytes=100_000)
        assert small.request_batch < 100
        seqs = [s for c in fetch_range(conn, small) for s in c.seqs]
        assert seqs == list(range(1, total + 1))


async def test_work_queue_fallback_reads_by_get(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    await fill(js, "WQ", [("wq.a", b"1"), ("wq.b", b"2"), ("wq.a", b"3", {"K": "v"})], subjects=["wq.>"], retention="workqueue")
    await js.add_consumer("WQ", durable_name="owner", ack_policy="explicit", filter_subject="wq.a")
    with _conn(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("WQ", 0, 3, ("wq.a",))))
        assert [s for c in chunks for s in c.seqs] == [1, 3]
        assert parse_headers(chunks[0].headers[1])[2] == [("K", "v")]  # type: ignore[index]
        multi = list(fetch_range_by_get(conn, FetchSpec("WQ", 0, 3, ("wq.b", "wq.a"))))
        assert [s for c in multi for s in c.seqs] == [1, 2, 3]
        assert [d for c in multi for d in c.data] == [b"1", b"2", b"3"]


@pytest.mark.parametrize("kind", ["bundled", "nats-server"])
def test_auth(kind: str, tmp_path: Path) -> None:
    srv = start_server(kind, tmp_path, args=["--user", "alice", "--pass", "s3cret"])
    try:
        ok = ConnectionOptions.from_options({"servers": srv.url, "user": "alice", "password": "s3cret"})
        with LeanConnection.connect(ok) as conn:
            conn.flush()
        in_url = ConnectionOptions.from_options({"servers": srv.url.replace("nats://", "nats://alice:s3cret@")})
        with LeanConnection.connect(in_url) as conn:
            conn.flush()
        bad = ConnectionOptions.from_options({"servers": srv.url, "user": "alice", "password": "nope"})
        with pytest.raises(NatsError, match="(?i)authorization"):
            LeanConnection.connect(bad)
    finally:
        srv.stop()


def test_connect_failure_names_the_servers() -> None:
    opts = ConnectionOptions.from_options({"servers": "nats://127.0.0.1:1", "connectTimeout": "1"})
    with pytest.raises(NatsError, match="could not connect to any server: nats://127.0.0.1:1"):
        LeanConnection.connect(opts)


@pytest.mark.parametrize("kind", ["bundled", "nats-server"])
def test_mutual_tls_and_range_read(kind: str, tmp_path: Path, certs: Path) -> None:
    srv = start_server(
        kind, tmp_path, args=["--tls", "--tlscert", str(certs / "server.pem"), "--tlskey", str(certs / "server.key"),
                              "--tlscacert", str(certs / "ca.pem"), "--tlsverify"],
    )
    try:
        opts = ConnectionOptions.from_options(
            {"servers": srv.url, "tlsCaFile": str(certs / "ca.pem"), "tlsCertFile": str(certs / "client.pem"),
             "tlsKeyFile": str(certs / "client.key")}
        )
        assert opts.tls
        with LeanConnection.connect(opts) as conn:
            conn.js_api("STREAM.CREATE.T", {"name": "T", "subjects": ["t.>"]})
            for i in range(300):
                _, ack = conn.request("t.x", b"p" * 1000 + str(i).encode())
                assert b'"seq"' in ack
            seqs = [s for c in fetch_range(conn, FetchSpec("T", 0, 300, avg_msg_bytes=1000)) for s in c.seqs]
            assert seqs == list(range(1, 301))
        no_cert = ConnectionOptions.from_options({"servers": srv.url, "tlsCaFile": str(certs / "ca.pem")})
        with pytest.raises(NatsError, match="could not connect"):
            LeanConnection.connect(no_cert).flush(5)
    finally:
        srv.stop()


class ScriptedServer:
    """Fault injection the real servers cannot be made to do on demand: a socket peer that
    answers a range read with a flow-control request, a PING, 12-token ack subjects (domain
    + account hash + random token) and a header message in between data messages."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.received = b""
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _wait_for(self, sock: socket.socket, pattern: bytes) -> re.Match[bytes]:
        regex = re.compile(pattern)
        while (m := regex.search(self.received)) is None:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("client went away")
            self.received += chunk
        return m

    def _run(self) -> None:
        try:
            sock, _ = self.listener.accept()
            with sock:
                sock.sendall(b'INFO {"server_id":"double","headers":true,"max_payload":1048576,"proto":1}\r\n')
                self._wait_for(sock, rb"PING\r\n")
                sock.sendall(b"PONG\r\n")
                m = self._wait_for(sock, rb"PUB \$JS\.API\.CONSUMER\.CREATE\.S\.(\S+) (\S+) \d+\r\n")
                body = b'{"type":"io.nats.jetstream.api.v1.consumer_create_response","num_pending":3}'
                sock.sendall(b"MSG %s 1 %d\r\n%s\r\n" % (m.group(2), len(body), body))
                m = self._wait_for(sock, rb"PUB \$JS\.API\.CONSUMER\.MSG\.NEXT\.S\.\S+ (\S+) \d+\r\n")
                inbox = m.group(1)
                sid = re.search(rb"SUB " + re.escape(inbox) + rb" (\d+)\r\n", self.received).group(1)  # type: ignore[union-attr]
                ack = b"$JS.ACK.dom.acchash.S.c.1.%d.%d.%d.%d.rnd"
                fc = b"NATS/1.0 100 FlowControl Request\r\n\r\n"
                hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
                sock.sendall(
                    b"HMSG %s %s fc.reply %d %d\r\n%s\r\n" % (inbox, sid, len(fc), len(fc), fc)
                    + b"PING\r\n"
                    + b"MSG a.b %s %s 3\r\nabc\r\n" % (sid, ack % (5, 5, 1700000000000000000, 2))
                    + b"HMSG a.c %s %s %d %d\r\n%sxyz\r\n" % (sid, ack % (6, 6, 1700000000000000001, 1), len(hdr), len(hdr) + 3, hdr)
                    + b"MSG a.d %s %s 1\r\nq\r\n" % (sid, ack % (7, 7, 1700000000000000002, 0))
                )
                m = self._wait_for(sock, rb"PUB \$JS\.API\.CONSUMER\.DELETE\.S\.\S+ (\S+) \d+\r\n")
                body = b'{"type":"io.nats.jetstream.api.v1.consumer_delete_response","success":true}'
                sock.sendall(b"MSG %s 1 %d\r\n%s\r\n" % (m.group(1), len(body), body))
                self._wait_for(sock, rb"PUB fc\.reply 0\r\n\r\n")
                self._wait_for(sock, rb"PONG\r\n")
        except BaseException as exc:  # reported by the test through self.error
            self.error = exc
        finally:
            self.listener.close()


def test_statuses_flow_control_ping_and_domain_ack_subjects() -> None:
    peer = ScriptedServer()
    opts = ConnectionOptions.from_options({"servers": f"nats://127.0.0.1:{peer.port}", "connectTimeout": "5"})
    with LeanConnection.connect(opts, read_timeout_s=5) as conn:
        chunks = list(fetch_range(conn, FetchSpec("S", 4, 10)))
        peer.thread.join(5)
    assert peer.error is None, peer.error
    assert [s for c in chunks for s in c.seqs] == [5, 6, 7]
    assert [d for c in chunks for d in c.data] == [b"abc", b"xyz", b"q"]
    assert [h for c in chunks for h in (c.headers or [])] == [b"", b"NATS/1.0\r\nK: v\r\n\r\n", b""]
    assert [t for c in chunks for t in c.ts_ns] == [1700000000000000000, 1700000000000000001, 1700000000000000002]


async def test_requests_bounded_by_bytes_when_the_average_misleads(
    server: ServerProcess, js, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    import spark_jetstream.read.fetch as lean

    await fill(js, "MB", [("mb.x", bytes([65 + i % 26]) * 3000) for i in range(60)], subjects=["mb.>"])
    # each pull request may carry ~10 kB although the batch count (from a wrong
    # average of 10 bytes) would allow thousands of messages
    monkeypatch.setattr(lean, "REQUEST_BYTES", 10_000)
    with _conn(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("MB", 0, 60, avg_msg_bytes=10)))
    assert [s for c in chunks for s in c.seqs] == list(range(1, 61))
    assert all(len(d) == 3000 for c in chunks for d in c.data)
    # a message larger than the byte bound: the bound grows until it fits
    monkeypatch.setattr(lean, "REQUEST_BYTES", 1000)
    with _conn(server) as conn:
        chunks = list(fetch_range(conn, FetchSpec("MB", 10, 14, avg_msg_bytes=10)))
    assert [s for c in chunks for s in c.seqs] == [11, 12, 13, 14]


# -- retries, failover and subjects (real servers, real sockets) ------------------------------


def _opts(*servers: str, **options: str) -> ConnectionOptions:
    return ConnectionOptions.from_options({"servers": ",".join(servers), **options})


class InOrder(random.Random):
    """Server order as listed (the default is random, like the NATS clients)."""

    def shuffle(self, x: Any, random: Any = None) -> None:  # noqa: ARG002
        return None


def test_api_calls_ride_out_a_server_killed_and_restarted_on_the_same_port(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    opts = _opts(server.url, retryTimeout="30s", retryBackoff="50ms", retryBackoffMax="500ms")
    outage = threading.Thread(target=lambda: (server.kill(), time.sleep(1.0), server.restart()))
    with LeanConnection.open(opts) as conn:
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
        started = time.monotonic()
        outage.start()
        names = []
        while outage.is_alive() or len(names) < 3:
            names.append(conn.js_api("STREAM.INFO.S")["config"]["name"])  # never fails: retried
            time.sleep(0.01)
        outage.join()
        elapsed = time.monotonic() - started
    assert set(names) == {"S"}
    assert conn.connects == 2  # the same object reconnected once, in place
    assert elapsed < 25, elapsed


def test_connect_retries_until_the_server_is_back(server: ServerProcess) -> None:
    url = server.url
    server.kill()
    timer = threading.Timer(1.0, server.restart)
    started = time.monotonic()
    timer.start()
    try:
        with LeanConnection.open(_opts(url, retryTimeout="30s", retryBackoffMax="200ms")) as conn:
            conn.flush(5)
    finally:
        timer.join()
    assert 0.9 < time.monotonic() - started < 25


def test_connect_gives_up_after_the_retry_timeout_naming_the_servers() -> None:
    started = time.monotonic()
    with pytest.raises(ConnectionLostError, match=r"could not connect to any server: nats://127.0.0.1:1: .*gave up after \d+ attempts in \d"):
        LeanConnection.open(_opts("nats://127.0.0.1:1", connectTimeout="1", retryTimeout="1s", retryBackoff="100ms"))
    assert time.monotonic() - started < 5


def test_a_range_read_resumes_after_a_restart_without_repeating_or_skipping(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spark_jetstream.read.fetch as lean

    create_stream(server.url, "R", ["r.>"])
    total = 3000
    publish_acked(server.url, [(f"r.{i % 3}", b"x" * 100) for i in range(total)])
    monkeypatch.setattr(lean, "REQUEST_BYTES", 32_000)  # small pulls: most of the range is still on the server
    seqs: list[int] = []
    with LeanConnection.open(_opts(server.url, retryTimeout="30s", retryBackoffMax="500ms")) as conn:
        for chunk in fetch_range(conn, FetchSpec("R", 0, total, chunk_rows=200, avg_msg_bytes=100)):
            if not seqs:
                server.kill()  # mid-read: the rest comes after the restart, from a new consumer
                server.restart()
            seqs.extend(chunk.seqs)
        assert conn.connects == 2
    assert seqs == list(range(1, total + 1))


def test_no_responders_on_the_api_are_retried_until_jetstream_answers(server: ServerProcess, caplog: pytest.LogCaptureFixture) -> None:
    create_stream(server.url, "S", ["s.>"])
    proxy = ApiProxy(server.url, "$PX.API")
    started = time.monotonic()
    timer = proxy.start_later(1.0)  # until then the server answers "no responders" (503)
    try:
        with caplog.at_level("INFO", logger="spark_jetstream.client.retry"), LeanConnection.open(
            _opts(server.url, apiPrefix="$PX.API", retryTimeout="20s", retryBackoffMax="200ms")
        ) as conn:
            assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
    finally:
        timer.join()
        proxy.stop()
    assert proxy.error is None, proxy.error
    assert 0.9 < time.monotonic() - started < 20
    assert "no responders for $PX.API.STREAM.INFO.S" in caplog.text and "retry 1 in" in caplog.text


def test_the_api_s_own_503_is_retried(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    with ApiProxy(server.url, "$PX.API", unavailable=3) as proxy, LeanConnection.open(
        _opts(server.url, apiPrefix="$PX.API", retryTimeout="20s", retryBackoff="50ms")
    ) as conn:
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
    assert proxy.error is None and proxy.requests == ["$PX.API.STREAM.INFO.S"] * 4


def test_api_timeouts_are_retried_within_the_request_timeout(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    started = time.monotonic()
    with ApiProxy(server.url, "$PX.API", swallow=2) as proxy, LeanConnection.open(
        _opts(server.url, apiPrefix="$PX.API", requestTimeout="300ms", retryTimeout="20s", retryBackoff="10ms")
    ) as conn:
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
        assert conn.connects == 1  # a slow reply is not a broken connection (checked with a PING)
        # the late replies of the swallowed requests never reach a later request
        assert conn.js_api("STREAM.INFO.S")["config"]["name"] == "S"
    assert proxy.error is None and len(proxy.requests) == 4
    assert 0.6 < time.monotonic() - started < 10


def test_jetstream_unavailable_past_the_timeout_is_reported_as_what_it_is(server: ServerProcess) -> None:
    started = time.monotonic()
    with LeanConnection.open(_opts(server.url, apiPrefix="$PX.API", retryTimeout="1s", retryBackoff="100ms")) as conn:
        with pytest.raises(JetStreamUnavailableError) as err:
            conn.js_api("STREAM.INFO.S")
    text = str(err.value)
    assert "no responders for $PX.API.STREAM.INFO.S (status 503)" in text
    assert "electing a leader" in text and re.search(r"gave up after \d+ attempts in 0\.\d+s \(retryTimeout=1s\)", text), text
    assert "no stream" not in text and "not found" not in text
    assert time.monotonic() - started < 5
    with LeanConnection.open(_opts(server.url, apiPrefix="$PX.API", retryTimeout="1s")) as conn, ApiProxy(
        server.url, "$PX.API", unavailable=1000
    ), pytest.raises(JetStreamApiError, match=r"JetStream system temporarily unavailable; gave up after") as api_err:
        conn.js_api("STREAM.INFO.S")
    assert api_err.value.err_code == 10008


def test_final_api_errors_are_not_retried(server: ServerProcess) -> None:
    started = time.monotonic()
    with LeanConnection.open(_opts(server.url, retryTimeout="30s")) as conn, pytest.raises(
        JetStreamApiError, match="stream not found"
    ):
        conn.js_api("STREAM.INFO.MISSING")
    assert time.monotonic() - started < 2


def test_failover_when_the_first_server_is_down(server_kind: str, server: ServerProcess, tmp_path: Path) -> None:
    dead = "nats://127.0.0.1:1"
    with LeanConnection.connect(_opts(dead, server.url, connectTimeout="1"), rng=InOrder()) as conn:
        assert conn.server_url == server.url
        conn.flush(5)
    # a connection whose server dies fails over to another server of the list
    other = start_server(server_kind, tmp_path / "other")
    try:
        opts = _opts(server.url, other.url, retryTimeout="20s", retryBackoffMax="200ms")
        with LeanConnection.connect(opts, rng=InOrder()) as conn:
            assert conn.server_url == server.url
            server.kill()
            assert "api" in conn.js_api("INFO") or "limits" in conn.js_api("INFO")
            assert conn.server_url == other.url and conn.connects == 2
    finally:
        other.stop()


def test_servers_are_tried_in_random_order(server_kind: str, server: ServerProcess, tmp_path: Path) -> None:
    other = start_server(server_kind, tmp_path / "other")
    try:
        opts = _opts(server.url, other.url)
        seen = set()
        for seed in range(12):
            with LeanConnection.connect(opts, rng=random.Random(seed)) as conn:
                seen.add(conn.server_url)
        assert seen == {server.url, other.url}
    finally:
        other.stop()


def _domain_server(kind: str, tmp_path: Path, domain: str) -> ServerProcess:
    store = tmp_path / "js"
    conf = tmp_path / "domain.conf"
    conf.write_text(f'jetstream {{ domain: {domain}, store_dir: "{store}" }}\n')
    return start_server(kind, None, args=["-c", str(conf)])


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_domain_routes_every_api_call(kind: str, tmp_path: Path) -> None:
    srv = _domain_server(kind, tmp_path, "hub")
    try:
        with LeanConnection.open(_opts(srv.url, domain="hub", retryTimeout="1s")) as conn:
            assert conn.api_subject("STREAM.INFO.D") == "$JS.hub.API.STREAM.INFO.D"
            conn.js_api("STREAM.CREATE.D", {"name": "D", "subjects": ["d.>"], "storage": "memory"})
            for i in range(20):
                conn.request("d.x", str(i).encode(), timeout=5)
            chunks = list(fetch_range(conn, FetchSpec("D", 5, 15, chunk_rows=4)))
            assert [s for c in chunks for s in c.seqs] == list(range(6, 16))
            assert conn.js_api("STREAM.INFO.D")["state"]["last_seq"] == 20
        # another domain is not this server's: the requests go nowhere (and the error says so)
        with LeanConnection.open(_opts(srv.url, domain="elsewhere", retryTimeout="500ms")) as conn:
            with pytest.raises(JetStreamUnavailableError, match=r"option domain='elsewhere'"):
                conn.js_api("STREAM.INFO.D")
    finally:
        srv.stop()


def test_every_api_subject_goes_through_the_api_prefix(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    publish_acked(server.url, [("s.a", b"1"), ("s.b", b"2")])
    with ApiProxy(server.url, "$PX.API") as proxy, LeanConnection.open(_opts(server.url, apiPrefix="$PX.API")) as conn:
        assert [s for c in fetch_range(conn, FetchSpec("S", 0, 2)) for s in c.seqs] == [1, 2]
        conn.flush(5)
        time.sleep(0.2)  # the proxy has seen the last request (the consumer delete) by now
    kinds = [".".join(r.split(".")[2:5]) for r in proxy.requests]
    assert kinds[:2] == ["CONSUMER.CREATE.S", "CONSUMER.MSG.NEXT"] and kinds[-1] == "CONSUMER.DELETE.S", kinds


def test_inbox_prefix_names_every_reply_subject(server: ServerProcess) -> None:
    create_stream(server.url, "S", ["s.>"])
    publish_acked(server.url, [("s.a", b"1"), ("s.b", b"2")])
    with connect(server.url) as spy:
        sid = spy.subscribe("my.inbox.>")
        default_sid = spy.subscribe("_INBOX.>")
        spy.flush(5)
        with LeanConnection.open(_opts(server.url, inboxPrefix="my.inbox")) as conn:
            conn.js_api("STREAM.INFO.S")
            assert [s for c in fetch_range(conn, FetchSpec("S", 0, 2)) for s in c.seqs] == [1, 2]
        # the spy sees what went to my.inbox.>: the API replies, and the pulled messages
        # (delivered to the pull request's inbox, under their own subjects)
        got = []
        while len(got) < 5:
            got.append(spy.wait_for_sid(sid, 5)[1].decode())
        assert sorted(g for g in got if not g.startswith("my.inbox.")) == ["s.a", "s.b"], got
        with pytest.raises(NatsTimeoutError):
            spy.wait_for_sid(default_sid, 0.3)
