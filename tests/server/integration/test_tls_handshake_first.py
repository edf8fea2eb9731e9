"""TLS `handshake_first` on both servers: TLS before INFO, and the "auto" fallback.

The same config file for both servers (`tls { ..., handshake_first: ... }`);
nats-py's `tls_handshake_first` is the client that starts with TLS.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import nats
import pytest

from jetstream_testing.process import ServerProcess

ConfigServer = Callable[..., ServerProcess]  # the `config_server` fixture (tests/conftest.py)


def _config(certs: Path, handshake_first: str) -> str:
    return (
        "tls {\n"
        f'  cert_file: "{certs / "server.pem"}"\n'
        f'  key_file: "{certs / "server.key"}"\n'
        f"  handshake_first: {handshake_first}\n"
        "}\n"
    )


def _ctx(certs: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certs / "ca.pem"))


async def _round_trip(srv: ServerProcess, certs: Path, *, first: bool) -> None:
    nc = await nats.connect(
        f"tls://127.0.0.1:{srv.port}",
        tls=_ctx(certs),
        tls_handshake_first=first,
        max_reconnect_attempts=0,
        connect_timeout=5,
    )
    try:
        assert nc._server_info.get("tls_required") is True
        sub = await nc.subscribe("first")
        await nc.publish("first", b"inside TLS")
        assert (await sub.next_msg(5)).data == b"inside TLS"
    finally:
        await nc.close()


def _first_bytes(srv: ServerProcess, wait: float) -> bytes:
    """What the server says, unprompted, to a client that says nothing."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=wait) as sock:
        try:
            return sock.recv(4096)
        except TimeoutError:
            return b""


async def test_handshake_first_sends_info_only_inside_tls(
    config_server: ConfigServer, certs: Path
) -> None:
    srv = config_server(_config(certs, "true"))
    await _round_trip(srv, certs, first=True)
    assert _first_bytes(srv, 0.5) == b""  # no INFO in clear text
    # a client waiting for INFO before TLS never gets one
    with pytest.raises((nats.errors.Error, OSError, TimeoutError)):
        await nats.connect(
            f"tls://127.0.0.1:{srv.port}",
            tls=_ctx(certs),
            allow_reconnect=False,
            max_reconnect_attempts=0,
            connect_timeout=1,
        )


async def test_handshake_first_auto_falls_back_to_info_first(
    config_server: ConfigServer, certs: Path
) -> None:
    srv = config_server(_config(certs, "auto"))
    await _round_trip(srv, certs, first=True)
    await _round_trip(srv, certs, first=False)
    assert _first_bytes(srv, 5).startswith(b"INFO ")


async def test_handshake_first_with_a_fallback_delay(
    config_server: ConfigServer, certs: Path
) -> None:
    srv = config_server(_config(certs, '"300ms"'))
    await _round_trip(srv, certs, first=True)
    await _round_trip(srv, certs, first=False)
