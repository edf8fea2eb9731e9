"""Authentication (token, user/password) and TLS, on both servers.

Certificates are made at test time with the `openssl` command line (a CA, a
server certificate for 127.0.0.1 and a client certificate); no key is
committed.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.errors import NoServersError

from jetstream_testing.process import ServerProcess, start_server


def _server(kind: str, store_dir: Path, *args: str) -> Iterator[ServerProcess]:
    proc = start_server(kind, store_dir, args=list(args))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def token_server(server_kind: str, store_dir: Path) -> Iterator[ServerProcess]:
    yield from _server(server_kind, store_dir, "--auth", "s3cret")


@pytest.fixture
def userpass_server(server_kind: str, store_dir: Path) -> Iterator[ServerProcess]:
    yield from _server(server_kind, store_dir, "--user", "alice", "--pass", "wonder")


async def _connect_fails(url: str, **kwargs: object) -> str:
    errors: list[str] = []

    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    with pytest.raises((NoServersError, nats.errors.Error, OSError)):
        await nats.connect(
            url,
            allow_reconnect=False,
            max_reconnect_attempts=0,
            connect_timeout=3,
            error_cb=on_error,
            **kwargs,  # type: ignore[arg-type]
        )
    return " ".join(errors)


async def _round_trip(nc: nats.NATS) -> None:
    sub = await nc.subscribe("auth.check")
    await nc.publish("auth.check", b"ok")
    assert (await sub.next_msg(2)).data == b"ok"


async def test_token_auth_success(token_server: ServerProcess) -> None:
    nc = await nats.connect(token_server.url, token="s3cret", max_reconnect_attempts=0)
    try:
        assert nc._server_info.get("auth_required") is True
        await _round_trip(nc)
    finally:
        await nc.close()


async def test_token_auth_failure(token_server: ServerProcess) -> None:
    errors = await _connect_fails(token_server.url, token="wrong")
    assert "authorization violation" in errors.lower()
    errors = await _connect_fails(token_server.url)
    assert "authorization violation" in errors.lower()


async def test_user_password_success(userpass_server: ServerProcess) -> None:
    nc = await nats.connect(
        userpass_server.url, user="alice", password="wonder", max_reconnect_attempts=0
    )
    try:
        await _round_trip(nc)
    finally:
        await nc.close()


async def test_user_password_failure(userpass_server: ServerProcess) -> None:
    errors = await _connect_fails(userpass_server.url, user="alice", password="nope")
    assert "authorization violation" in errors.lower()


def test_raw_auth_violation_text(userpass_server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", userpass_server.port), timeout=3) as sock:
        sock.recv(4096)  # INFO
        sock.sendall(b'CONNECT {"verbose":false,"user":"alice","pass":"x"}\r\nPING\r\n')
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    assert data == b"-ERR 'Authorization Violation'\r\n"


def test_raw_non_ascii_credentials_are_refused_cleanly(token_server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", token_server.port), timeout=3) as sock:
        sock.recv(4096)
        sock.sendall('CONNECT {"verbose":false,"auth_token":"sécret"}\r\nPING\r\n'.encode())
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    assert data == b"-ERR 'Authorization Violation'\r\n"


def test_raw_ops_before_connect_need_auth(token_server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", token_server.port), timeout=3) as sock:
        sock.recv(4096)
        sock.sendall(b"SUB foo 1\r\n")
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    assert data == b"-ERR 'Authorization Violation'\r\n"


async def test_other_clients_unaffected_by_failed_auth(token_server: ServerProcess) -> None:
    good = await nats.connect(token_server.url, token="s3cret", max_reconnect_attempts=0)
    try:
        await _connect_fails(token_server.url, token="bad")
        await _round_trip(good)
    finally:
        await good.close()


# -- TLS -------------------------------------------------------------------------------


def _client_ctx(certs: Path, with_cert: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    if with_cert:
        ctx.load_cert_chain(str(certs / "client.pem"), str(certs / "client.key"))
    return ctx


@pytest.fixture
def tls_server(server_kind: str, store_dir: Path, certs: Path) -> Iterator[ServerProcess]:
    yield from _server(
        server_kind, store_dir, "--tls", "--tlscert", str(certs / "server.pem"),
        "--tlskey", str(certs / "server.key"),
    )


async def test_tls_connect_and_round_trip(tls_server: ServerProcess, certs: Path) -> None:
    nc = await nats.connect(
        f"tls://127.0.0.1:{tls_server.port}", tls=_client_ctx(certs), max_reconnect_attempts=0
    )
    try:
        assert nc._server_info.get("tls_required") is True
        await _round_trip(nc)
        big = b"z" * 300_000
        sub = await nc.subscribe("tls.big")
        await nc.publish("tls.big", big)
        assert (await sub.next_msg(3)).data == big
    finally:
        await nc.close()


async def test_tls_rejects_plain_client(tls_server: ServerProcess) -> None:
    def plain() -> bytes:
        with socket.create_connection(("127.0.0.1", tls_server.port), timeout=5) as sock:
            info = sock.recv(4096)
            assert b'"tls_required":true' in info
            sock.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
            data = b""
            try:
                while chunk := sock.recv(4096):
                    data += chunk
            except ConnectionResetError:
                pass
            return data

    data = await asyncio.get_running_loop().run_in_executor(None, plain)
    assert b"PONG" not in data


@pytest.fixture
def mtls_server(server_kind: str, store_dir: Path, certs: Path) -> Iterator[ServerProcess]:
    yield from _server(
        server_kind, store_dir, "--tls", "--tlscert", str(certs / "server.pem"),
        "--tlskey", str(certs / "server.key"), "--tlscacert", str(certs / "ca.pem"),
        "--tlsverify",
    )


async def test_tls_verify_needs_client_cert(mtls_server: ServerProcess, certs: Path) -> None:
    url = f"tls://127.0.0.1:{mtls_server.port}"
    nc = await nats.connect(url, tls=_client_ctx(certs, with_cert=True), max_reconnect_attempts=0)
    try:
        assert nc._server_info.get("tls_verify") is True
        await _round_trip(nc)
    finally:
        await nc.close()
    # the server refuses the handshake; depending on timing nats-py either raises
    # from connect() or hands back a client whose connection is already gone
    try:
        refused = await nats.connect(
            url, tls=_client_ctx(certs, with_cert=False), allow_reconnect=False,
            max_reconnect_attempts=0, connect_timeout=3,
        )
    except (NoServersError, nats.errors.Error, OSError):
        return
    try:
        with pytest.raises((nats.errors.Error, OSError)):
            await refused.flush(timeout=2)
    finally:
        await refused.close()


def test_tls_app_data_in_same_segment_as_handshake_finish(
    tls_server: ServerProcess, certs: Path
) -> None:
    # the client's Finished and its CONNECT+PING leave in one TCP write, so the
    # server decrypts application data in the read that completes the handshake
    ctx = _client_ctx(certs)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=5) as sock:
        buf = b""
        while b"\r\n" not in buf:
            buf += sock.recv(4096)
        assert buf.startswith(b"INFO ")
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                if pending := outgoing.read():
                    sock.sendall(pending)
                incoming.write(sock.recv(65536))
        tls.write(b'CONNECT {"verbose":false}\r\nSUB s 1\r\nPUB s 2\r\nok\r\nPING\r\n')
        sock.sendall(outgoing.read())  # Finished + application data together
        plain = b""
        while not plain.endswith(b"PONG\r\n"):
            chunk = sock.recv(65536)
            assert chunk, f"server closed; got {plain!r}"
            incoming.write(chunk)
            try:
                while True:
                    plain += tls.read(65536)
            except ssl.SSLWantReadError:
                pass
        assert plain == b"MSG s 1 2\r\nok\r\nPONG\r\n"
