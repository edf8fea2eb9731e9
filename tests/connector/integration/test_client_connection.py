"""The lean executor-side client's connection (client/connection.py) on real sockets and
both servers: requests and API errors, auth, TLS, connect failures, and the protocol's
statuses, flow control and pings from a scripted peer."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from lean_helpers import lean_connection

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.client import (
    JetStreamApiError,
    LeanConnection,
    NatsError,
    NoRespondersError,
)
from spark_jetstream.options import ConnectionOptions
from spark_jetstream.read.fetch import FetchSpec, fetch_range


async def test_requests_and_api_errors(server: ServerProcess, js) -> None:  # type: ignore[no-untyped-def]
    with lean_connection(server) as conn:
        assert conn.info is not None and conn.info.headers
        conn.flush()
        with pytest.raises(NoRespondersError, match="no responders for nobody.home"):
            conn.request("nobody.home", b"", timeout=5)
        with pytest.raises(JetStreamApiError, match="stream not found") as err:
            conn.js_api("STREAM.INFO.MISSING")
        assert err.value.err_code == 10059 and err.value.code == 404
        account = conn.js_api("INFO")
        assert "api" in account or "limits" in account


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

    def __init__(self, script: Callable[[ScriptedServer, socket.socket], None] | None = None) -> None:
        self.script = script or ScriptedServer._range_read
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
                self.script(self, sock)
        except BaseException as exc:  # reported by the test through self.error
            self.error = exc
        finally:
            self.listener.close()

    def _range_read(self, sock: socket.socket) -> None:
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


def _acks_ping_and_a_message(peer: ScriptedServer, sock: socket.socket) -> None:
    sid = peer._wait_for(sock, rb"SUB r\.\* (\d+)\r\n").group(1)
    sock.sendall(b"MSG r.1 %b 2\r\nok\r\nMSG r.2 %b 2\r\nok\r\nPING\r\nMSG r.x %b 3\r\nodd\r\n" % (sid, sid, sid))
    peer._wait_for(sock, rb"PONG\r\n")
    sock.sendall(b"MSG r.3 %b 2\r\nok\r\n" % sid)
    peer._wait_for(sock, rb"UNSUB " + sid + rb"\r\n")


def test_read_frames_lets_the_caller_take_a_run_of_frames_first() -> None:
    # a publisher's bulk ack reading: `take` consumes what it recognises from the buffer's
    # start; PINGs after it are answered, the frames after it returned, a read it took whole
    # returns nothing
    peer = ScriptedServer(_acks_ping_and_a_message)
    taken: list[bytes] = []

    def take(buf: bytes, pos: int) -> int:
        while (m := re.compile(rb"MSG (r\.\d) \d+ 2\r\nok\r\n").match(buf, pos)) is not None:
            taken.append(m.group(1))
            pos = m.end()
        return pos

    opts = ConnectionOptions.from_options({"servers": f"nats://127.0.0.1:{peer.port}", "connectTimeout": "5"})
    with LeanConnection.connect(opts, read_timeout_s=5) as conn:
        sid = conn.subscribe("r.*")
        frames: list[tuple[bytes, ...]] = []
        while not frames:  # the peer's bytes may come in more than one read
            frames = conn.read_frames(take=take)
        assert [(f[0], f[1], f[5]) for f in frames] == [(b"MSG", b"r.x", b"odd")]
        assert taken == [b"r.1", b"r.2"]
        assert conn.read_frames(take=take) == []  # r.3, taken whole
        assert taken == [b"r.1", b"r.2", b"r.3"]
        conn.unsubscribe(sid)
        peer.thread.join(5)
    assert peer.error is None, peer.error
