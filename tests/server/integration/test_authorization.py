"""``authorization { users = [...] }`` from a config file, on both servers.

Users with plain and bcrypt passwords, NKey users (challenge-response on the
INFO nonce), ``no_auth_user``, a bcrypt token, who ``/connz?auth=1`` shows,
and the configurations nats-server refuses to start with (the bundled server
refuses the same files). Hashes and keys are made at test time.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Callable
from typing import Any

import bcrypt
import nats
import nkeys
import pytest
from nats.errors import NoServersError
from raw_client import RawClient

from jetstream_testing.process import ServerProcess

ConfigServer = Callable[..., ServerProcess]


def _hash(password: str) -> str:
    # cost 4 (bcrypt's minimum) keeps the test fast; both servers accept it
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()


def _user_seed() -> tuple[str, str]:
    """A fresh user NKey: (seed, public key)."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    return seed.decode(), nkeys.from_seed(seed).public_key.decode()


async def _connects(url: str, **kwargs: Any) -> bool:
    try:
        nc = await nats.connect(
            url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=3, **kwargs
        )
    except (NoServersError, nats.errors.Error, OSError):
        return False
    try:
        await nc.flush(2)
        return nc.is_connected
    except (nats.errors.Error, OSError):
        return False
    finally:
        await nc.close()


def _connz(srv: ServerProcess, query: str = "") -> dict[str, Any]:
    assert srv.monitor_port, "server started without monitoring"
    url = f"http://127.0.0.1:{srv.monitor_port}/connz{query}"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return dict(json.loads(resp.read()))


async def test_users_plain_and_bcrypt(config_server: ConfigServer) -> None:
    srv = config_server(
        f"""
        authorization {{
          users = [
            {{ user: alice, password: wonder }}
            {{ user: bob, password: "{_hash('builder')}" }}
          ]
        }}
        """
    )
    assert await _connects(srv.url, user="alice", password="wonder")
    assert await _connects(srv.url, user="bob", password="builder")
    assert not await _connects(srv.url, user="alice", password="builder")
    assert not await _connects(srv.url, user="bob", password="wonder")
    assert not await _connects(srv.url, user="carol", password="wonder")
    assert not await _connects(srv.url)


async def test_bcrypt_hash_is_not_a_password(config_server: ConfigServer) -> None:
    hashed = _hash("s3cret")
    srv = config_server(f'authorization {{ user: u, password: "{hashed}" }}')
    assert await _connects(srv.url, user="u", password="s3cret")
    assert not await _connects(srv.url, user="u", password=hashed)


@pytest.mark.parametrize("prefix", ["$2a$", "$2b$", "$2y$"])
async def test_bcrypt_variants(config_server: ConfigServer, prefix: str) -> None:
    hashed = prefix + _hash("pw")[4:]
    srv = config_server(f'authorization {{ token: "{hashed}" }}')
    assert await _connects(srv.url, token="pw")
    assert not await _connects(srv.url, token="px")


async def test_nkey_user(config_server: ConfigServer) -> None:
    seed, public = _user_seed()
    other_seed, _ = _user_seed()
    srv = config_server(
        f"""
        authorization {{
          users = [ {{ nkey: {public} }}, {{ user: plain, password: plain }} ]
        }}
        """,
        http_port=-1,
    )
    raw = RawClient(srv.port)
    assert len(raw.info["nonce"]) == 15 and raw.info.get("auth_required") is True
    raw.close()
    assert await _connects(srv.url, nkeys_seed_str=seed)
    assert await _connects(srv.url, user="plain", password="plain")
    assert not await _connects(srv.url, nkeys_seed_str=other_seed)
    nc = await nats.connect(srv.url, nkeys_seed_str=seed, max_reconnect_attempts=0)
    try:
        (conn,) = _connz(srv, "?auth=1")["connections"]
        assert conn["authorized_user"] == public
        (conn,) = _connz(srv)["connections"]
        assert "authorized_user" not in conn
    finally:
        await nc.close()


def test_nkey_signature_must_sign_this_connections_nonce(config_server: ConfigServer) -> None:
    seed, public = _user_seed()
    srv = config_server(f"authorization {{ users = [ {{ nkey: {public} }} ] }}")
    kp = nkeys.from_seed(seed.encode())
    first = RawClient(srv.port)
    stale_sig = kp.sign(first.info["nonce"].encode())
    second = RawClient(srv.port)
    import base64

    replayed = {"verbose": False, "nkey": public, "sig": base64.b64encode(stale_sig).decode()}
    second.send(b"CONNECT " + json.dumps(replayed).encode() + b"\r\nPING\r\n")
    assert second.read_all_until_close() == b"-ERR 'Authorization Violation'\r\n"
    fresh = {"verbose": False, "nkey": public,
             "sig": base64.urlsafe_b64encode(stale_sig).decode().rstrip("=")}
    first.send(b"CONNECT " + json.dumps(fresh).encode() + b"\r\n")
    assert first.until_pong() == []
    first.close()
    second.close()


async def test_no_auth_user(config_server: ConfigServer) -> None:
    srv = config_server(
        """
        authorization {
          users = [
            { user: guest, password: guest, permissions: { publish: "public.>", subscribe: "public.>" } }
            { user: admin, password: admin }
          ]
        }
        no_auth_user: guest
        """,
        http_port=-1,
    )
    c = RawClient(srv.port)
    assert "auth_required" not in c.info
    # no CONNECT at all: the first op is applied as the no_auth_user
    c.send(b"SUB public.news 1\r\nSUB private 2\r\nPUB public.news 2\r\nhi\r\n")
    assert c.until_pong() == [
        b"+OK",
        b"-ERR 'Permissions Violation for Subscription to \"private\"'",
        b"+OK",
        b"MSG public.news 1 2",
        b"hi",
    ]
    assert await _connects(srv.url)
    assert await _connects(srv.url, user="admin", password="admin")
    assert not await _connects(srv.url, user="admin", password="wrong")
    (conn,) = _connz(srv, "?auth=true")["connections"]
    assert conn["authorized_user"] == "guest"
    c.close()


@pytest.mark.parametrize(
    "config",
    [
        "authorization { user: a, password: b, token: t }",
        "authorization { token: t, users = [ { user: a, password: b } ] }",
        "authorization { user: a, password: b, users = [ { user: c, password: d } ] }",
        "authorization { users = [ { password: b } ] }",
        "authorization { users = [ { user: a, password: b }, { user: a, password: c } ] }",
        "authorization { users = [ { nkey: UNOTAKEY } ] }",
        "authorization { users = [ { user: a, password: b, permissions: { publish: { allow: ['a b'] } } } ] }",
        "authorization { users = [ { user: a, password: b, permissions: { subscribe: { allow: ['a b c'] } } } ] }",
        "authorization { users = [ { user: a, password: b, permissions: { bogus: x } } ] }",
        "authorization { users = [ { user: a, password: b } ] }\nno_auth_user: nobody",
        "no_auth_user: nobody",
    ],
)
def test_configs_both_servers_refuse(config_server: ConfigServer, config: str) -> None:
    with pytest.raises(RuntimeError, match="did not start"):
        config_server(config)
