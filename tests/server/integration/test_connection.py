"""Connection life cycle (jetstream_server/app/connection.py) on both servers: ping keepalive,
stale connections, slow consumers, auth timeout, outbound batching."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from jetstream_testing.process import ServerProcess, start_server


def _start_with_conf(kind: str, tmp_path: Path, text: str) -> ServerProcess:
    conf = tmp_path / f"{kind}.conf"
    conf.write_text(text)
    return start_server(kind, tmp_path / "store", args=["-c", str(conf)], http_port=-1)


@pytest.fixture
def keepalive_server(server_kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    proc = _start_with_conf(server_kind, tmp_path, 'ping_interval: "200ms"\nping_max: 2\n')
    try:
        yield proc
    finally:
        proc.stop()


def _read_until_closed(sock: socket.socket, answer_pings: bool) -> bytes:
    data = b""
    sock.settimeout(5)
    while chunk := sock.recv(4096):
        data += chunk
        if answer_pings and b"PING\r\n" in chunk:
            sock.sendall(b"PONG\r\n")
            if data.count(b"PING\r\n") >= 4:
                return data
    return data


def test_stale_connection_closed(keepalive_server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", keepalive_server.port), timeout=5) as sock:
        sock.recv(4096)
        sock.sendall(b'CONNECT {"verbose":false}\r\n')
        data = _read_until_closed(sock, answer_pings=False)
    assert data.startswith(b"PING\r\n")
    assert data.endswith(b"-ERR 'Stale Connection'\r\n")  # within the read timeout (5 s)


def test_answered_pings_keep_connection(keepalive_server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", keepalive_server.port), timeout=5) as sock:
        sock.recv(4096)
        sock.sendall(b'CONNECT {"verbose":false}\r\n')
        data = _read_until_closed(sock, answer_pings=True)
    assert data.count(b"PING\r\n") >= 4
    assert b"-ERR" not in data


@pytest.fixture
def small_pending_server(server_kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    proc = _start_with_conf(server_kind, tmp_path, "max_pending: 256KB\nmax_payload: 64KB\n")
    try:
        yield proc
    finally:
        proc.stop()


async def test_slow_consumer_disconnected_and_counted(small_pending_server: ServerProcess) -> None:
    proc = small_pending_server
    # a subscriber that never reads
    lazy = socket.create_connection(("127.0.0.1", proc.port), timeout=5)
    lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    lazy.recv(4096)
    lazy.sendall(b'CONNECT {"verbose":false}\r\nSUB flood 1\r\nPING\r\n')
    assert lazy.recv(4096).endswith(b"PONG\r\n")
    nc = await nats.connect(proc.url, max_reconnect_attempts=0)
    try:
        payload = b"x" * 8192
        deadline = time.monotonic() + 10

        def slow_consumers() -> int:
            url = f"http://127.0.0.1:{proc.monitor_port}/varz"
            with urllib.request.urlopen(url, timeout=5) as r:
                return int(json.loads(r.read())["slow_consumers"])

        loop = asyncio.get_running_loop()
        while time.monotonic() < deadline:
            for _ in range(200):
                await nc.publish("flood", payload)
            await nc.flush()
            if await loop.run_in_executor(None, slow_consumers) >= 1:
                break
        assert await loop.run_in_executor(None, slow_consumers) >= 1
        # the publisher is fine
        sub = await nc.subscribe("after")
        await nc.publish("after", b"ok")
        assert (await sub.next_msg(2)).data == b"ok"
    finally:
        await nc.close()
        lazy.close()


@pytest.fixture
def write_deadline_server(server_kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    proc = _start_with_conf(server_kind, tmp_path, 'write_deadline: "300ms"\n')
    try:
        yield proc
    finally:
        proc.stop()


async def test_write_deadline_makes_slow_consumer(write_deadline_server: ServerProcess) -> None:
    await test_slow_consumer_disconnected_and_counted(write_deadline_server)


@pytest.fixture
def auth_timeout_server(server_kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    proc = _start_with_conf(
        server_kind, tmp_path, "authorization {\n  token: t\n  timeout: 0.3\n}\n"
    )
    try:
        yield proc
    finally:
        proc.stop()


def test_auth_timeout(auth_timeout_server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", auth_timeout_server.port), timeout=5) as sock:
        sock.recv(4096)
        data = _read_until_closed(sock, answer_pings=False)
    assert data == b"-ERR 'Authentication Timeout'\r\n"


async def test_many_messages_arrive_in_order(server: ServerProcess) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        sub = await nc.subscribe("order", pending_msgs_limit=100_000)
        n = 20_000
        for i in range(n):
            await nc.publish("order", i.to_bytes(4, "big"))
        await nc.flush()
        got = [int.from_bytes((await sub.next_msg(5)).data, "big") for _ in range(n)]
        assert got == list(range(n))
    finally:
        await nc.close()
