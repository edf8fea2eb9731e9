"""WebSocket clients on both servers (`websocket { ... }`, the same config file).

nats-py's WebSocket transport (``ws://`` URLs, aiohttp) for the NATS and
JetStream round trips; aiohttp directly for compression and for what a
hostile client sends (a plain HTTP request, a compressed message that inflates
past every limit).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import aiohttp
import nats
import pytest
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, nats_server_binary, write_config

WS_CONFIG = """
max_pending: 2MB
websocket {
  host: 127.0.0.1
  port: -1
  no_tls: true
  compression: true
}
"""

ConfigServer = Callable[..., ServerProcess]  # the `config_server` fixture (tests/conftest.py)


def _ws_url(srv: ServerProcess) -> str:
    line = srv.wait_for_log(r"Listening for websocket clients on ws://")
    match = re.search(r"ws://(\S+):(\d+)", line)
    assert match is not None, line
    return f"ws://127.0.0.1:{match.group(2)}"


async def test_nats_and_jetstream_over_websocket(config_server: ConfigServer) -> None:
    srv = config_server(WS_CONFIG)
    nc = await nats.connect(_ws_url(srv), max_reconnect_attempts=0, connect_timeout=5)
    try:
        sub = await nc.subscribe("ws.>")
        big = b"w" * 300_000
        await nc.publish("ws.small", b"hello")
        await nc.publish("ws.big", big)
        assert (await sub.next_msg(5)).data == b"hello"
        assert (await sub.next_msg(5)).data == big
        js = nc.jetstream()
        await js.add_stream(name="WS", subjects=["wsjs.>"])
        assert (await js.publish("wsjs.a", b"x")).seq == 1
    finally:
        await nc.close()


async def _raw_exchange(url: str, frames: list[bytes], *, compress: int) -> list[bytes]:
    """Send `frames` as binary messages; collect what the server sends until
    it has answered the last PING (or closed)."""
    got: list[bytes] = []
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url, compress=compress) as ws:
            for frame in frames:
                await ws.send_bytes(frame)
            async with asyncio.timeout(10):
                async for msg in ws:
                    if msg.type != aiohttp.WSMsgType.BINARY:
                        break
                    got.append(msg.data)
                    if b"PONG" in b"".join(got):
                        break
    return got


async def test_compressed_messages_both_ways(config_server: ConfigServer) -> None:
    srv = config_server(WS_CONFIG)
    connect = b'CONNECT {"verbose":false,"protocol":1}\r\n'
    got = await _raw_exchange(
        _ws_url(srv), [connect + b"SUB c 1\r\nPUB c 5\r\nhello\r\n", b"PING\r\n"], compress=15
    )
    data = b"".join(got)
    assert data.startswith(b"INFO ")
    assert b"MSG c 1 5\r\nhello\r\n" in data
    assert b"PONG\r\n" in data


async def test_plain_http_request_is_refused(config_server: ConfigServer) -> None:
    srv = config_server(WS_CONFIG)
    host, port = _ws_url(srv).removeprefix("ws://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    assert status.startswith(b"HTTP/1.1 400")


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_websocket_without_tls_must_say_no_tls(kind: str, tmp_path: Path) -> None:
    conf = write_config(tmp_path / "ws.conf", "websocket { port: -1 }\n")
    command = [sys.executable, "-m", "jetstream_server"] if kind == "bundled" else [nats_server_binary()]
    result = subprocess.run(
        [*command, "-a", "127.0.0.1", "-p", "-1", "-c", str(conf)],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode != 0
    assert "websocket requires TLS configuration" in result.stderr + result.stdout


async def test_inflation_bomb_closes_only_that_client(
    config_server: ConfigServer, server_kind: str
) -> None:
    if server_kind != "bundled":
        pytest.skip("the inflation bound is the bundled server's own invariant")
    srv = config_server(WS_CONFIG)
    url = _ws_url(srv)
    bystander = await nats.connect(url, max_reconnect_attempts=0, connect_timeout=5)
    try:
        # 8 MB of zeros: a few KB on the wire, four times max_pending inflated
        bomb = b"PUB bomb 8388608\r\n" + bytes(8 * 1024 * 1024) + b"\r\n"
        assert len(zlib.compress(bomb)) < 64 * 1024
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(url, compress=15) as ws:
                await ws.send_bytes(b'CONNECT {"verbose":false}\r\n')
                await ws.send_bytes(bomb)
                async with asyncio.timeout(10):
                    async for _ in ws:
                        pass
                assert ws.close_code == 1009
        await bystander.flush(timeout=5)
    finally:
        await bystander.close()


async def test_websocket_over_tls(config_server: ConfigServer, certs: Path) -> None:
    srv = config_server(
        "websocket {\n  host: 127.0.0.1\n  port: -1\n  tls {\n"
        f'    cert_file: "{certs / "server.pem"}"\n    key_file: "{certs / "server.key"}"\n'
        "  }\n}\n"
    )
    line = srv.wait_for_log(r"Listening for websocket clients on wss://")
    port = line.rsplit(":", 1)[1].strip()
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    nc = await nats.connect(
        f"wss://127.0.0.1:{port}", tls=ctx, max_reconnect_attempts=0, connect_timeout=5
    )
    try:
        sub = await nc.subscribe("wss")
        await nc.publish("wss", b"secure")
        assert (await sub.next_msg(5)).data == b"secure"
    finally:
        await nc.close()
