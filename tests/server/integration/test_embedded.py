"""`EmbeddedServer` (jetstream_server/embedded.py): a server in a background thread."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.request
from pathlib import Path

import nats
import pytest
from raw_client import RawClient

from jetstream_server import EmbeddedServer
from jetstream_server.config import AuthSettings, ConfigError


def _port_closed(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


async def test_context_manager_round_trip(tmp_path: Path) -> None:
    with EmbeddedServer(store_dir=str(tmp_path), port=0) as srv:
        assert srv.port > 0
        assert srv.url == f"nats://127.0.0.1:{srv.port}"
        nc = await nats.connect(srv.url, max_reconnect_attempts=0)
        try:
            sub = await nc.subscribe("emb")
            await nc.publish("emb", b"hi")
            assert (await sub.next_msg(2)).data == b"hi"
            js = nc.jetstream()
            info = await js.account_info()
            assert (info.streams, info.consumers) == (0, 0)
            await js.add_stream(name="E", subjects=["e.>"])
            ack = await js.publish("e.1", b"kept")
            assert (ack.stream, ack.seq) == ("E", 1)
            assert (await js.get_msg("E", 1)).data == b"kept"
            assert (tmp_path / "jetstream" / "$G" / "streams" / "E").is_dir()  # the store_dir given
        finally:
            await nc.close()
    assert _port_closed(srv.port)


async def test_relative_store_dir_stays_put_when_the_process_changes_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook starts the server with a relative store_dir, then changes directory:
    the streams stay where they were created and keep serving."""
    monkeypatch.chdir(tmp_path)
    with EmbeddedServer(store_dir="data", port=0) as srv:
        nc = await nats.connect(srv.url, max_reconnect_attempts=0)
        try:
            js = nc.jetstream()
            await js.add_stream(name="REL", subjects=["rel.>"])
            await js.publish("rel.1", b"one")
            (tmp_path / "elsewhere").mkdir()
            monkeypatch.chdir(tmp_path / "elsewhere")
            await js.publish("rel.2", b"two")
            assert (await js.get_msg("REL", 1)).data == b"one"
            await js.add_stream(name="REL2", subjects=["rel2.>"])
        finally:
            await nc.close()
    streams = tmp_path / "data" / "jetstream" / "$G" / "streams"
    assert sorted(p.name for p in streams.iterdir()) == ["REL", "REL2"]
    assert not (tmp_path / "elsewhere" / "data").exists()


def test_memory_only_store_is_removed_on_stop() -> None:
    srv = EmbeddedServer(store_dir=None, port=0)
    store = srv.config.jetstream.store_dir
    assert store is not None and Path(store).is_dir()
    with srv:
        pass
    assert not Path(store).exists()


def test_http_port_and_options() -> None:
    with EmbeddedServer(http_port=0, max_payload=4096, server_name="emb-1") as srv:
        assert srv.http_port
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.http_port}/varz", timeout=5) as r:
            varz = json.loads(r.read())
        assert varz["max_payload"] == 4096
        assert varz["server_name"] == "emb-1"
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.http_port}/healthz", timeout=5) as r:
            assert json.loads(r.read()) == {"status": "ok"}


async def test_auth_option() -> None:
    """`auth=AuthSettings(...)` is the server's authorization: its INFO asks for
    credentials, a wrong token gets nats-server's error, the right one works."""
    with EmbeddedServer(auth=AuthSettings(token="tok")) as srv:
        raw = RawClient(srv.port)
        assert raw.info.get("auth_required") is True
        raw.send(b'CONNECT {"verbose":false,"auth_token":"wrong"}\r\nPING\r\n')
        assert raw.read_all_until_close() == b"-ERR 'Authorization Violation'\r\n"
        raw.close()
        nc = await nats.connect(srv.url, token="tok", max_reconnect_attempts=0)
        try:
            sub = await nc.subscribe("emb.auth")
            await nc.publish("emb.auth", b"in")
            assert (await sub.next_msg(2)).data == b"in"
        finally:
            await nc.close()


def test_stop_is_idempotent() -> None:
    srv = EmbeddedServer()
    srv.start()
    port = srv.port
    srv.stop()
    srv.stop()
    assert _port_closed(port)


def test_two_servers_side_by_side() -> None:
    with EmbeddedServer() as a, EmbeddedServer() as b:
        assert a.port != b.port


def test_bad_options() -> None:
    with pytest.raises(TypeError, match="unknown option"):
        EmbeddedServer(no_such_option=1)
    with pytest.raises(ConfigError, match="max_pending"):
        EmbeddedServer(max_pending=1024)


def test_port_in_use_raises() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        with pytest.raises(OSError):
            EmbeddedServer(port=sock.getsockname()[1]).start()


async def test_many_clients(tmp_path: Path) -> None:
    with EmbeddedServer(store_dir=str(tmp_path)) as srv:
        clients = await asyncio.gather(*(nats.connect(srv.url) for _ in range(20)))
        try:
            subs = [await c.subscribe("all") for c in clients]
            await asyncio.gather(*(c.flush() for c in clients))
            await clients[0].publish("all", b"x")
            got = await asyncio.gather(*(s.next_msg(2) for s in subs))
            assert all(m.data == b"x" for m in got)
        finally:
            await asyncio.gather(*(c.close() for c in clients))
