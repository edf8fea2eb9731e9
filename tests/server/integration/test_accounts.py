"""Accounts from a config file, on both servers with the same file.

``accounts { A: { users, jetstream: {...} } ... }``: isolated subject spaces,
isolated JetStream (streams of one account invisible to another, stored under
``jetstream/<account>/streams``), ``$JS.API.INFO`` with the account's limits
and usage, nats-server's errors when an account limit is hit, 10039 in an
account without JetStream (the system account too), /accountz and the
account fields of /connz, and the account configurations nats-server refuses.
One server per kind serves the module; each test uses its own stream names.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from raw_client import RawClient
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, start_server

ACCOUNTS_CONFIG = """
accounts {
  A: {
    users: [ { user: a, password: a }, { user: a2, password: a2 } ]
    jetstream: { max_mem: 1MB, max_file: 2MB, max_streams: 3, max_consumers: 2 }
  }
  B: { users: [ { user: b, password: b } ], jetstream: enabled }
  C: { users: [ { user: c, password: c } ] }
  SYS: { users: [ { user: sys, password: sys } ] }
}
system_account: SYS
"""

LIMITS_A = {
    "max_memory": 1024 * 1024,
    "max_storage": 2 * 1024 * 1024,
    "max_streams": 3,
    "max_consumers": 2,
    "max_ack_pending": -1,
    "memory_max_stream_bytes": -1,
    "storage_max_stream_bytes": -1,
    "max_bytes_required": False,
}
UNLIMITED = {key: (False if key == "max_bytes_required" else -1) for key in LIMITS_A}


@pytest.fixture(scope="module", params=SERVER_KINDS)
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp(f"accounts-{request.param}")
    conf = base / "server.conf"
    conf.write_text(ACCOUNTS_CONFIG)
    proc = start_server(str(request.param), base / "js", config=conf, http_port=-1)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
async def clients(srv: ServerProcess) -> AsyncIterator[dict[str, NATS]]:
    out: dict[str, NATS] = {}
    try:
        for user in ("a", "a2", "b", "c", "sys"):
            out[user] = await nats.connect(
                srv.url, user=user, password=user, connect_timeout=5, max_reconnect_attempts=0
            )
        yield out
    finally:
        for nc in out.values():
            await nc.close()


async def _api(nc: NATS, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = json.dumps(body).encode() if body is not None else b""
    msg = await nc.request("$JS.API." + subject, payload, timeout=5)
    return dict(json.loads(msg.data))


def _error(resp: dict[str, Any]) -> tuple[int, int, str] | None:
    err = resp.get("error")
    return None if err is None else (err["code"], err["err_code"], err["description"])


def _monitor(srv: ServerProcess, path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{srv.monitor_port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_subjects_are_isolated_between_accounts(clients: dict[str, NATS]) -> None:
    a, a2, b = clients["a"], clients["a2"], clients["b"]
    got: dict[str, list[bytes]] = {"a2": [], "b": []}

    async def on_a2(msg: Any) -> None:
        got["a2"].append(msg.data)

    async def on_b(msg: Any) -> None:
        got["b"].append(msg.data)

    await a2.subscribe("iso.>", cb=on_a2)
    await b.subscribe("iso.>", cb=on_b)
    await a2.flush()
    await b.flush()
    await a.publish("iso.1", b"from A")
    await b.publish("iso.2", b"from B")
    # a request from A round-trips inside A only: B's subscriber never sees it
    await a.flush()
    await b.flush()
    async with asyncio.timeout(5):
        while not got["a2"] or not got["b"]:
            await a2.flush()
            await b.flush()
    assert got == {"a2": [b"from A"], "b": [b"from B"]}


async def test_streams_are_invisible_to_other_accounts(
    srv: ServerProcess, clients: dict[str, NATS]
) -> None:
    a, b = clients["a"], clients["b"]
    created = await _api(a, "STREAM.CREATE.VIS", {"name": "VIS", "subjects": ["vis.>"]})
    assert _error(created) is None
    names = await _api(b, "STREAM.NAMES")
    assert "VIS" not in (names.get("streams") or [])
    assert _error(await _api(b, "STREAM.INFO.VIS")) == (404, 10059, "stream not found")
    # B has a stream of the same name and subjects of its own
    assert _error(await _api(b, "STREAM.CREATE.VIS", {"name": "VIS", "subjects": ["vis.>"]})) is None
    ack = json.loads((await a.request("vis.1", b"only A", timeout=5)).data)
    assert ack["stream"] == "VIS" and ack["seq"] == 1
    assert (await _api(a, "STREAM.INFO.VIS"))["state"]["messages"] == 1
    assert (await _api(b, "STREAM.INFO.VIS"))["state"]["messages"] == 0
    # separate store directories, as nats-server keeps them
    assert srv.store_dir is not None
    root = Path(srv.store_dir) / "jetstream"
    assert (root / "A" / "streams" / "VIS").is_dir()
    assert (root / "B" / "streams" / "VIS").is_dir()
    for nc in (a, b):
        assert _error(await _api(nc, "STREAM.DELETE.VIS")) is None


async def test_info_reports_the_account_limits_and_usage(clients: dict[str, NATS]) -> None:
    a, b = clients["a"], clients["b"]
    info_b = await _api(b, "INFO")
    assert info_b["limits"] == UNLIMITED
    assert _error(await _api(a, "STREAM.CREATE.USE", {"name": "USE", "subjects": ["use.>"]})) is None
    try:
        before = await _api(a, "INFO")
        assert before["limits"] == LIMITS_A
        await a.request("use.1", b"x" * 1000, timeout=5)
        after = await _api(a, "INFO")
        assert after["streams"] == before["streams"] and after["streams"] >= 1
        assert after["storage"] - before["storage"] > 1000
        assert (await _api(b, "INFO"))["storage"] == info_b["storage"]
    finally:
        await _api(a, "STREAM.DELETE.USE")


async def test_account_limit_errors(clients: dict[str, NATS]) -> None:
    a = clients["a"]
    mb = 1024 * 1024
    big_file = {"name": "LIM", "subjects": ["lim.>"], "max_bytes": 3 * mb}
    assert _error(await _api(a, "STREAM.CREATE.LIM", big_file)) == (
        500, 10047, "insufficient storage resources available")
    big_mem = {**big_file, "storage": "memory", "max_bytes": 2 * mb}
    assert _error(await _api(a, "STREAM.CREATE.LIM", big_mem)) == (
        500, 10028, "insufficient memory resources available")
    too_many = {"name": "LIM", "subjects": ["lim.>"], "max_consumers": 5}
    assert _error(await _api(a, "STREAM.CREATE.LIM", too_many)) == (
        400, 10026, "maximum consumers limit reached")
    names = ["LIM", "LIM2", "LIM3"]
    try:
        for name in names:
            assert _error(await _api(a, f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name.lower()}.>"]})) is None
        assert _error(await _api(a, "STREAM.CREATE.LIM4", {"name": "LIM4", "subjects": ["lim4"]})) == (
            400, 10027, "maximum number of streams reached")
        # the account's max_consumers counts per stream, as nats-server counts it
        for durable in ("d1", "d2"):
            body = {"stream_name": "LIM", "config": {"durable_name": durable, "ack_policy": "explicit"}}
            assert _error(await _api(a, f"CONSUMER.CREATE.LIM.{durable}", body)) is None
        body = {"stream_name": "LIM", "config": {"durable_name": "d3", "ack_policy": "explicit"}}
        assert _error(await _api(a, "CONSUMER.CREATE.LIM.d3", body)) == (
            400, 10026, "maximum consumers limit reached")
        body = {"stream_name": "LIM2", "config": {"durable_name": "d3", "ack_policy": "explicit"}}
        assert _error(await _api(a, "CONSUMER.CREATE.LIM2.d3", body)) is None
        # publishing past max_file: the account's error, nothing stored beyond it
        payload = b"y" * 100_000
        stored = 0
        for _ in range(40):
            ack = json.loads((await a.request("lim.x", payload, timeout=5)).data)
            if "error" in ack:
                break
            stored += 1
        assert ack["error"] == {"code": 400, "err_code": 10002, "description": "resource limits exceeded for account"}
        assert 15 <= stored <= 21  # about 2 MB of 100 kB messages went in
        info = await _api(a, "INFO")
        assert info["storage"] <= LIMITS_A["max_storage"]
    finally:
        for name in names:
            await _api(a, f"STREAM.DELETE.{name}")


@pytest.mark.parametrize("user", ["c", "sys"])
async def test_account_without_jetstream_answers_10039(clients: dict[str, NATS], user: str) -> None:
    nc = clients[user]
    not_enabled = (503, 10039, "JetStream not enabled for account")
    info = await _api(nc, "INFO")
    assert info["type"] == "io.nats.jetstream.api.v1.account_info_response"
    assert _error(info) == not_enabled
    created = await _api(nc, "STREAM.CREATE.X", {"name": "X", "subjects": ["x"]})
    names = await _api(nc, "STREAM.NAMES")
    assert _error(created) == _error(names) == not_enabled
    if user == "sys":
        # the system account gets nats-server's system response, nothing else
        assert created == names == {
            "type": "io.nats.jetstream.api.v1.system_response", "error": info["error"]}
    else:
        assert created["type"] == "io.nats.jetstream.api.v1.stream_create_response"
        assert names["type"] == "io.nats.jetstream.api.v1.stream_names_response"
        assert (names["total"], names["offset"], names["limit"]) == (0, 0, 0)


async def test_accountz_and_connz_account_fields(srv: ServerProcess, clients: dict[str, NATS]) -> None:
    status, body = _monitor(srv, "/accountz")
    assert status == 200
    listing = json.loads(body)
    assert listing["system_account"] == "SYS"
    assert sorted(listing["accounts"]) == ["$G", "A", "B", "C", "SYS"]
    status, body = _monitor(srv, "/accountz?acc=A")
    assert status == 200
    detail = json.loads(body)["account_detail"]
    assert detail["account_name"] == "A"
    assert detail["jetstream_enabled"] is True
    assert detail["client_connections"] == 2
    assert detail["name_tag"] == "A"
    assert detail["expired"] is False and detail["complete"] is True
    assert "is_system" not in detail
    sys_detail = json.loads(_monitor(srv, "/accountz?acc=SYS")[1])["account_detail"]
    assert sys_detail["is_system"] is True and sys_detail["jetstream_enabled"] is False
    c_detail = json.loads(_monitor(srv, "/accountz?acc=C")[1])["account_detail"]
    assert c_detail["jetstream_enabled"] is False and c_detail["client_connections"] == 1
    assert _monitor(srv, "/accountz?acc=NOPE") == (400, "Account NOPE does not exist")
    assert json.loads(_monitor(srv, "/varz")[1])["system_account"] == "SYS"
    jsz = json.loads(_monitor(srv, "/jsz?accounts=true")[1])
    assert jsz["accounts"] == 2
    details = {d["name"]: d for d in jsz["account_details"]}
    assert sorted(details) == ["A", "B"]
    # nats-server shows the account's limits there, -1 as an unsigned 64-bit number
    assert (details["A"]["reserved_memory"], details["A"]["reserved_storage"]) == (1024 * 1024, 2 * 1024 * 1024)
    assert details["B"]["reserved_storage"] == 2**64 - 1
    conns = json.loads(_monitor(srv, "/connz?auth=1")[1])["connections"]
    seen = {(c["authorized_user"], c.get("account"), c.get("name_tag")) for c in conns}
    assert {("a", "A", "A"), ("a2", "A", "A"), ("b", "B", "B"), ("c", "C", "C"), ("sys", "SYS", "SYS")} <= seen
    plain = json.loads(_monitor(srv, "/connz")[1])["connections"]
    assert all("account" not in c and "authorized_user" not in c for c in plain)


@pytest.mark.parametrize(
    "config",
    [
        "accounts { $G: { users: [ { user: a, password: a } ] } }",
        "accounts { A: { users: [ { user: a, password: a } ] }, B: { users: [ { user: a, password: b } ] } }",
        "authorization { user: x, password: y }\naccounts { A: { users: [ { user: a, password: a } ] } }",
        "accounts { A: { users: [ { user: a, password: a } ] } }\nsystem_account: NOPE",
        "accounts { A: { jetstream: sometimes } }",
        "accounts { A: { jetstream: { max_mem: lots } } }",
        "accounts { A: 1 }",
    ],
)
def test_account_configs_both_servers_refuse(config_server: Any, config: str) -> None:
    with pytest.raises(RuntimeError, match="did not start"):
        config_server(config)


async def test_global_account_keeps_jetstream_when_only_the_system_account_is_configured(
    config_server: Any,
) -> None:
    proc = config_server(
        "authorization { users = [ { user: g, password: g } ] }\n"
        "accounts { SYS: { users: [ { user: s, password: s } ] } }\nsystem_account: SYS\n"
    )
    g = await nats.connect(proc.url, user="g", password="g", max_reconnect_attempts=0)
    s = await nats.connect(proc.url, user="s", password="s", max_reconnect_attempts=0)
    try:
        assert _error(await _api(g, "INFO")) is None
        assert _error(await _api(s, "INFO")) == (503, 10039, "JetStream not enabled for account")
    finally:
        await g.close()
        await s.close()


async def test_stream_byte_rules_and_the_server_limit_across_accounts(config_server: Any) -> None:
    proc = config_server(
        "jetstream { max_file_store: 1MB }\n"
        "accounts {\n"
        "  R: { users: [ { user: r, password: r } ],\n"
        "       jetstream: { max_bytes_required: true, disk_max_stream_bytes: 100KB } }\n"
        "  Q: { users: [ { user: q, password: q } ], jetstream: enabled }\n"
        "}\n"
    )
    r = await nats.connect(proc.url, user="r", password="r", max_reconnect_attempts=0)
    q = await nats.connect(proc.url, user="q", password="q", max_reconnect_attempts=0)
    try:
        assert _error(await _api(r, "STREAM.CREATE.R1", {"name": "R1", "subjects": ["r1"]})) == (
            400, 10113, "account requires a stream config to have max bytes set")
        assert _error(await _api(r, "STREAM.CREATE.R1", {"name": "R1", "subjects": ["r1"], "max_bytes": 200 * 1024})) == (
            400, 10122, "stream max bytes exceeds account limit max stream bytes")
        assert _error(await _api(r, "STREAM.CREATE.R1", {"name": "R1", "subjects": ["r1"], "max_bytes": 100 * 1024})) is None
        # the server's max_file_store is shared: Q cannot reserve what R holds
        assert _error(await _api(q, "STREAM.CREATE.Q1", {"name": "Q1", "subjects": ["q1"], "max_bytes": 900 * 1024})) is None
        assert _error(await _api(q, "STREAM.CREATE.Q2", {"name": "Q2", "subjects": ["q2"], "max_bytes": 100 * 1024})) == (
            500, 10047, "insufficient storage resources available")
    finally:
        await r.close()
        await q.close()


def test_account_default_permissions_and_a_no_auth_user_in_an_account(config_server: Any) -> None:
    proc = config_server(
        "accounts {\n"
        "  A: { default_permissions: { publish: \"ok.>\" },\n"
        "       users: [ { user: a, password: a }, { user: admin, password: admin, permissions: {} } ] }\n"
        "}\n"
        "no_auth_user: a\n"
    )
    c = RawClient(proc.port)
    try:
        c.send(b'CONNECT {"verbose":false}\r\nSUB ok.1 1\r\nPUB ok.1 1\r\nx\r\nPUB no 1\r\nx\r\n')
        assert c.until_pong() == [b"MSG ok.1 1 1", b"x", b"-ERR 'Permissions Violation for Publish to \"no\"'"]
    finally:
        c.close()
