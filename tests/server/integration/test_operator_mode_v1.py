"""Operator mode with JWTs of the first version of `nats-io/jwt` (both servers).

v1 tokens (header `alg: ed25519`, the claim `type` at the top level, the
signature over the encoded claims alone) are still carried by deployments and
by client test suites; nats-server reads them as its JWT library migrates them:
an account's limits without JetStream (v1 had none), signing keys as a list of
keys, a user's permissions and limits in its `nats` object and its
`issuer_account` at the top level. Issue 24: the bundled server refused such a
configuration with "not a operator claim".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nkeys
import pytest
from nats_auth import UNLIMITED, Key, encode_jwt, encode_jwt_v1, new_key
from raw_client import RawClient
from server_kinds import SERVER_KINDS
from test_operator_mode import AUTH_VIOLATION, _answers, _connect

from jetstream_testing.process import ServerProcess, start_server


@dataclass(frozen=True)
class V1Operator:
    app: Key
    app_signing: Key
    config: str


def _v1_account(key: Key, name: str, signer: Key, **nats: object) -> str:
    return encode_jwt_v1({"sub": key.public, "name": name, "type": "account", "nats": nats}, signer)


def _v1_user(user: Key, signer: Key, **top: object) -> str:
    nats = {"pub": {"allow": ["ok.>", "_INBOX.>", "$JS.API.>"]}, "sub": {"allow": ["ok.>", "_INBOX.>"]}}
    return encode_jwt_v1({"sub": user.public, "name": "u", "type": "user", **top, "nats": nats}, signer)


def _v1_operator(store_dir: Path) -> V1Operator:
    op = new_key(nkeys.PREFIX_BYTE_OPERATOR)
    sys_acc, app, app_signing = (new_key(nkeys.PREFIX_BYTE_ACCOUNT) for _ in range(3))
    op_jwt = encode_jwt_v1({"sub": op.public, "name": "op", "type": "operator", "nats": {}}, op)
    # v1 accounts have no JetStream: limits the v2 library would read are dropped
    app_jwt = _v1_account(app, "APP", op, limits={**UNLIMITED, "mem_storage": -1, "disk_storage": -1},
                          signing_keys=[app_signing.public])
    config = (
        f"operator: {op_jwt}\n"
        f"system_account: {sys_acc.public}\n"
        "resolver: MEMORY\n"
        "resolver_preload: {\n"
        f"  {sys_acc.public}: {_v1_account(sys_acc, 'SYS', op, limits=UNLIMITED)}\n"
        f"  {app.public}: {app_jwt}\n"
        "}\n"
        f'jetstream {{ store_dir: "{store_dir}" }}\n'
    )
    return V1Operator(app, app_signing, config)


def _lines(c: RawClient) -> list[bytes]:
    """What came before the PONG the client asked for; the client closed."""
    try:
        lines = []
        while (line := c.readline()) != b"PONG":
            lines.append(line)
        return lines
    finally:
        c.close()


@pytest.fixture(scope="module", params=SERVER_KINDS)
def v1_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, V1Operator]]:
    base = tmp_path_factory.mktemp(f"operator-v1-{request.param}")
    op = _v1_operator(base / "js")
    (base / "server.conf").write_text(op.config)
    proc = start_server(str(request.param), None, config=base / "server.conf")
    try:
        yield proc, op
    finally:
        proc.stop()


def test_v1_users_connect_with_their_permissions(v1_server: tuple[ServerProcess, V1Operator]) -> None:
    srv, op = v1_server
    for signer, extra in ((op.app, {}), (op.app_signing, {"issuer_account": op.app.public})):
        user = new_key(nkeys.PREFIX_BYTE_USER)
        token = _v1_user(user, signer, **extra)
        assert _answers(srv, token, user) == []
        lines = _lines(_connect(srv, token, user,
                                b"SUB ok.x 1\r\nPUB ok.x 2\r\nhi\r\nPUB no.x 2\r\nhi\r\nSUB no.y 2\r\nPING\r\n"))
        assert lines == [
            b"MSG ok.x 1 2", b"hi",
            b"-ERR 'Permissions Violation for Publish to \"no.x\"'",
            b"-ERR 'Permissions Violation for Subscription to \"no.y\"'",
        ]


def test_v1_signatures_are_checked(v1_server: tuple[ServerProcess, V1Operator]) -> None:
    srv, op = v1_server
    user = new_key(nkeys.PREFIX_BYTE_USER)
    header, payload, signature = _v1_user(user, op.app).split(".")
    # a v1 token signed over header.payload (the v2 way) does not verify as v1
    v2_signed = encode_jwt({"sub": user.public, "type": "user", "nats": {}}, op.app)
    assert _answers(srv, f"{header}.{payload}.{v2_signed.split('.')[2]}", user) == [AUTH_VIOLATION]
    stranger = new_key(nkeys.PREFIX_BYTE_ACCOUNT)
    assert _answers(srv, _v1_user(user, stranger), user) == [AUTH_VIOLATION]
    assert _answers(srv, f"{header}.{payload}.{signature}", user) == []


def test_v1_accounts_have_no_jetstream(v1_server: tuple[ServerProcess, V1Operator]) -> None:
    srv, op = v1_server
    user = new_key(nkeys.PREFIX_BYTE_USER)
    lines = _lines(_connect(srv, _v1_user(user, op.app), user,
                            b"SUB _INBOX.r 1\r\nPUB $JS.API.INFO _INBOX.r 0\r\n\r\nPING\r\n"))
    # no JetStream in the account: nobody answers its API requests (no responders)
    assert lines == []
