"""Operator (JWT) mode on both servers with the same generated configuration.

An operator, ``resolver: MEMORY`` and ``resolver_preload`` with account JWTs;
clients send user JWTs and the INFO nonce signed with the user's seed. The
cases nats-server's own tests (and nats.py's) care about: a valid user (also
one signed by an account signing key), the JWT's permissions, a tampered or
foreign signature, an expired user, a revoked user, an account the operator
did not sign, a missing nonce signature, a user whose JWT runs out while
connected (``-ERR 'User Authentication Expired'``), the account's JetStream
limits from its JWT, the configurations both servers refuse, and a
configuration without a system account served without JetStream. All keys
and JWTs are made at test time; one server per kind serves the module.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys
import pytest
from nats_auth import JETSTREAM_UNLIMITED, UNLIMITED, Key, encode_jwt, new_key
from raw_client import RawClient
from server_kinds import SERVER_KINDS
from test_jetstream_off import _start_without_flag

from jetstream_testing.process import ServerProcess, start_server

AUTH_VIOLATION = b"-ERR 'Authorization Violation'"


@dataclass(frozen=True)
class Operator:
    operator: Key
    app: Key  # account with JetStream limits
    app_signing: Key  # a signing key of APP
    other_op_account: Key  # an account signed by another operator
    revoked_user: Key
    config: str


def _account_jwt(key: Key, name: str, signer: Key, nats: dict[str, Any]) -> str:
    return encode_jwt({"sub": key.public, "name": name, "nats": {"type": "account", "version": 2, **nats}}, signer)


def _user_jwt(user: Key, signer: Key, *, issuer_account: str | None = None, **claims: Any) -> str:
    nats: dict[str, Any] = {"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1, "type": "user", "version": 2}
    nats.update(claims.pop("nats", {}))
    if issuer_account:
        nats["issuer_account"] = issuer_account
    return encode_jwt({"sub": user.public, "name": "u", **claims, "nats": nats}, signer)


def _operator(store_dir: Path) -> Operator:
    op = new_key(nkeys.PREFIX_BYTE_OPERATOR)
    stranger = new_key(nkeys.PREFIX_BYTE_OPERATOR)
    sys_acc, app, other = (new_key(nkeys.PREFIX_BYTE_ACCOUNT) for _ in range(3))
    app_signing = new_key(nkeys.PREFIX_BYTE_ACCOUNT)
    revoked = new_key(nkeys.PREFIX_BYTE_USER)
    op_jwt = encode_jwt({"sub": op.public, "name": "op", "nats": {"type": "operator", "version": 2}}, op)
    js_limits = {**JETSTREAM_UNLIMITED, "mem_storage": 1024 * 1024, "disk_storage": 4 * 1024 * 1024,
                 "streams": 5, "consumer": 7}
    app_jwt = _account_jwt(app, "APP", op, {
        "limits": {**UNLIMITED, **js_limits},
        "signing_keys": [app_signing.public],
        "revocations": {revoked.public: int(time.time()) + 5},
    })
    config = (
        f"operator: {op_jwt}\n"
        f"system_account: {sys_acc.public}\n"
        "resolver: MEMORY\n"
        "resolver_preload: {\n"
        f"  {sys_acc.public}: {_account_jwt(sys_acc, 'SYS', op, {'limits': UNLIMITED})}\n"
        f"  {app.public}: {app_jwt}\n"
        f"  {other.public}: {_account_jwt(other, 'OTHER', stranger, {'limits': {**UNLIMITED, **JETSTREAM_UNLIMITED}})}\n"
        "}\n"
        f'jetstream {{ store_dir: "{store_dir}" }}\n'
    )
    return Operator(op, app, app_signing, other, revoked, config)


@pytest.fixture(scope="module", params=SERVER_KINDS)
def op_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Operator]]:
    base = tmp_path_factory.mktemp(f"operator-{request.param}")
    op = _operator(base / "js")
    (base / "server.conf").write_text(op.config)
    proc = start_server(str(request.param), None, config=base / "server.conf", http_port=-1)
    try:
        yield proc, op
    finally:
        proc.stop()


def _sig(user: Key, nonce: str) -> str:
    return base64.urlsafe_b64encode(user.sign(nonce.encode())).decode().rstrip("=")


def _connect(srv: ServerProcess, token: str, user: Key | None, then: bytes = b"") -> RawClient:
    """A raw client that sent CONNECT with `token` and the nonce signed by `user`."""
    c = RawClient(srv.port)
    opts: dict[str, Any] = {"verbose": False, "pedantic": False, "jwt": token, "protocol": 1, "headers": True}
    if user is not None:
        opts["sig"] = _sig(user, c.info["nonce"])
    c.send(b"CONNECT " + json.dumps(opts).encode() + b"\r\n" + then)
    return c


def _answers(srv: ServerProcess, token: str, user: Key | None) -> list[bytes]:
    """What the server answers CONNECT + PING: [] when accepted, else the -ERR."""
    c = _connect(srv, token, user, b"PING\r\n")
    lines: list[bytes] = []
    try:
        while (line := c.readline()) != b"PONG":
            lines.append(line)
    except (ConnectionError, OSError):
        pass  # closed after the -ERR
    finally:
        c.close()
    return lines


def test_valid_users_and_jwt_permissions(op_server: tuple[ServerProcess, Operator]) -> None:
    srv, op = op_server
    assert "nonce" in RawClient(srv.port).info  # operator mode always sends one
    user = new_key(nkeys.PREFIX_BYTE_USER)
    assert _answers(srv, _user_jwt(user, op.app), user) == []
    signed = new_key(nkeys.PREFIX_BYTE_USER)
    assert _answers(srv, _user_jwt(signed, op.app_signing, issuer_account=op.app.public), signed) == []
    limited = new_key(nkeys.PREFIX_BYTE_USER)
    token = _user_jwt(limited, op.app, nats={"pub": {"allow": ["ok.>"]}, "sub": {"deny": ["secret"]}})
    c = _connect(srv, token, limited)
    try:
        c.send(b"SUB ok.1 1\r\nSUB secret 2\r\nPUB ok.1 2\r\nhi\r\nPUB no 2\r\nhi\r\n")
        assert c.until_pong() == [
            b"-ERR 'Permissions Violation for Subscription to \"secret\"'",
            b"MSG ok.1 1 2",
            b"hi",
            b"-ERR 'Permissions Violation for Publish to \"no\"'",
        ]
    finally:
        c.close()


def test_user_jwt_limits_subs_and_payload(op_server: tuple[ServerProcess, Operator]) -> None:
    srv, op = op_server
    user = new_key(nkeys.PREFIX_BYTE_USER)
    c = _connect(srv, _user_jwt(user, op.app, nats={"subs": 2, "payload": 10}), user)
    try:
        c.send(b"SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nPUB a 10\r\n0123456789\r\n")
        assert c.until_pong() == [b"-ERR 'maximum subscriptions exceeded'", b"MSG a 1 10", b"0123456789"]
        c.send(b"PUB a 11\r\n0123456789X\r\n")
        assert b"-ERR 'Maximum Payload Violation'" in c.read_all_until_close()
    finally:
        c.close()


def test_refused_users_get_authorization_violation(op_server: tuple[ServerProcess, Operator]) -> None:
    srv, op = op_server
    user = new_key(nkeys.PREFIX_BYTE_USER)
    good = _user_jwt(user, op.app)
    header, payload, sig = good.split(".")
    tampered = f"{header}.{payload}.{sig[:-4]}AAAA"
    stranger_account = new_key(nkeys.PREFIX_BYTE_ACCOUNT)  # no account JWT anywhere
    cases = {
        "tampered signature": (tampered, user),
        "signed by an unknown account": (_user_jwt(user, stranger_account), user),
        "signing key without issuer_account": (_user_jwt(user, op.app_signing), user),
        "expired": (_user_jwt(user, op.app, exp=int(time.time()) - 10), user),
        "not yet valid": (_user_jwt(user, op.app, nbf=int(time.time()) + 3600), user),
        "revoked": (_user_jwt(op.revoked_user, op.app), op.revoked_user),
        "account of another operator": (_user_jwt(user, op.other_op_account), user),
        "nonce signed by another key": (good, new_key(nkeys.PREFIX_BYTE_USER)),
        "no nonce signature": (good, None),
        "garbage": ("not.a.jwt", user),
    }
    for name, (token, signer) in cases.items():
        assert _answers(srv, token, signer) == [AUTH_VIOLATION], name


def test_user_jwt_that_runs_out_closes_the_connection(op_server: tuple[ServerProcess, Operator]) -> None:
    srv, op = op_server
    user = new_key(nkeys.PREFIX_BYTE_USER)
    c = _connect(srv, _user_jwt(user, op.app, exp=int(time.time()) + 2), user)
    c.sock.settimeout(6)
    try:
        assert c.until_pong() == []
        rest = c.read_all_until_close()
    finally:
        c.close()
    assert b"-ERR 'User Authentication Expired'" in rest


def test_account_jetstream_limits_come_from_its_jwt(op_server: tuple[ServerProcess, Operator]) -> None:
    srv, op = op_server
    user = new_key(nkeys.PREFIX_BYTE_USER)
    c = _connect(srv, _user_jwt(user, op.app), user)
    try:
        c.send(b"SUB _INBOX.x 1\r\nPUB $JS.API.INFO _INBOX.x 0\r\n\r\n")
        while not c.readline().startswith(b"MSG _INBOX.x 1 "):
            pass  # PONGs, INFO updates
        info = json.loads(c.readline())
    finally:
        c.close()
    assert info["limits"] == {
        "max_memory": 1024 * 1024, "max_storage": 4 * 1024 * 1024, "max_streams": 5, "max_consumers": 7,
        "max_ack_pending": -1, "memory_max_stream_bytes": -1, "storage_max_stream_bytes": -1,
        "max_bytes_required": False,
    }


@pytest.mark.parametrize("case", ["no resolver", "bad preload", "accounts too", "no system account"])
def test_operator_configs_both_servers_refuse(config_server: Any, case: str, tmp_path: Path) -> None:
    op = _operator(tmp_path / "js")
    text = op.config
    if case == "no resolver":
        text = text.replace("resolver: MEMORY\n", "")
    elif case == "bad preload":
        text = re.sub(rf"(  {op.app.public}: )\S+", r"\1eyJ0eXAiOiJKV1QifQ.e30.AAAA", text)
    elif case == "accounts too":
        text += "accounts { A: { users: [ { user: a, password: a } ] } }\n"
    else:
        text = re.sub(r"system_account: \S+\n", "", text)
    with pytest.raises(RuntimeError, match="did not start"):
        config_server(text)


def test_no_system_account_serves_without_jetstream(server_kind: str, tmp_path: Path) -> None:
    """Only JetStream needs the system account (the refusal above): without it both
    servers serve operator mode, warn, and have no system account at all (a request to
    `$SYS.REQ.SERVER.PING` gets no answer). nats.py's JWT tests run such a config; the
    bundled server used to refuse to start."""
    op = _operator(tmp_path / "js")
    text = re.sub(r"jetstream \{.*\}\n", "", re.sub(r"system_account: \S+\n", "", op.config))
    proc = _start_without_flag(server_kind, tmp_path, text)
    try:
        assert any("Trusted Operators should utilize a System Account" in line for line in proc.log)
        user = new_key(nkeys.PREFIX_BYTE_USER)
        c = _connect(proc, _user_jwt(user, op.app), user,
                     b"SUB a.b 1\r\nSUB _INBOX.r 2\r\nPUB $SYS.REQ.SERVER.PING _INBOX.r 0\r\n\r\n"
                     b"PUB a.b 2\r\nhi\r\nPING\r\n")
        try:
            lines = []
            while (line := c.readline()) != b"PONG":
                lines.append(line)
        finally:
            c.close()
        assert lines == [b"MSG a.b 1 2", b"hi"]
    finally:
        proc.stop()


async def test_exports_and_imports_from_account_jwts(config_server: Any) -> None:
    import asyncio

    import nats

    op = new_key(nkeys.PREFIX_BYTE_OPERATOR)
    exp, imp, sys_acc = (new_key(nkeys.PREFIX_BYTE_ACCOUNT) for _ in range(3))
    op_jwt = encode_jwt({"sub": op.public, "name": "op", "nats": {"type": "operator", "version": 2}}, op)
    exp_jwt = _account_jwt(exp, "EXP", op, {"limits": UNLIMITED, "exports": [
        {"name": "news", "subject": "news.>", "type": "stream"},
        {"name": "help", "subject": "help", "type": "service"},
    ]})
    imp_jwt = _account_jwt(imp, "IMP", op, {"limits": UNLIMITED, "imports": [
        {"name": "news", "subject": "news.>", "account": exp.public, "local_subject": "exp.news.>", "type": "stream"},
        {"name": "help", "subject": "help", "account": exp.public, "local_subject": "ask", "type": "service"},
        {"name": "secret", "subject": "secret", "account": exp.public, "type": "stream"},  # not exported
    ]})
    proc = config_server(
        f"operator: {op_jwt}\nresolver: MEMORY\nsystem_account: {sys_acc.public}\n"
        f"resolver_preload: {{\n  {exp.public}: {exp_jwt}\n  {imp.public}: {imp_jwt}\n"
        f"  {sys_acc.public}: {_account_jwt(sys_acc, 'SYS', op, {'limits': UNLIMITED})}\n}}\n"
    )
    users = {}
    for name, account in (("e", exp), ("i", imp)):
        key = new_key(nkeys.PREFIX_BYTE_USER)
        users[name] = await nats.connect(
            proc.url, user_jwt_cb=lambda k=key, a=account: _user_jwt(k, a).encode(),
            signature_cb=lambda nonce, k=key: base64.b64encode(k.sign(nonce.encode())),
            max_reconnect_attempts=0,
        )
    e, i = users["e"], users["i"]
    try:
        got: list[tuple[str, bytes]] = []

        async def on_msg(msg: Any) -> None:
            got.append((msg.subject, msg.data))

        async def helper(msg: Any) -> None:
            await msg.respond(b"help from EXP")

        await i.subscribe("exp.news.>", cb=on_msg)
        await i.subscribe("secret", cb=on_msg)
        await e.subscribe("help", cb=helper)
        await i.flush()
        await e.flush()
        await e.publish("secret", b"no")
        await e.publish("news.1", b"yes")
        await e.flush()
        async with asyncio.timeout(5):
            while not got:
                await asyncio.sleep(0.01)
        assert got == [("exp.news.1", b"yes")]
        assert (await i.request("ask", b"?", timeout=5)).data == b"help from EXP"
    finally:
        await e.close()
        await i.close()
