"""Monitoring HTTP (`-m`): /healthz, /varz, /connz, /jsz on both servers."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from jetstream_testing.process import ServerProcess, start_server


@pytest.fixture
def monitored(server_kind: str, store_dir: Path) -> Iterator[ServerProcess]:
    proc = start_server(server_kind, store_dir, http_port=-1)
    try:
        yield proc
    finally:
        proc.stop()


def _get(proc: ServerProcess, path: str) -> Any:
    assert proc.monitor_port, "the server did not log its monitor port"
    with urllib.request.urlopen(f"http://127.0.0.1:{proc.monitor_port}{path}", timeout=5) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("application/json")
        return json.loads(r.read())


def test_healthz(monitored: ServerProcess) -> None:
    assert _get(monitored, "/healthz") == {"status": "ok"}


async def test_varz_counts(monitored: ServerProcess) -> None:
    before = _get(monitored, "/varz")
    for key in (
        "server_id", "version", "host", "port", "connections", "total_connections", "in_msgs",
        "out_msgs", "in_bytes", "out_bytes", "slow_consumers", "subscriptions", "uptime", "mem",
        "cpu", "start", "now", "max_payload", "jetstream",
    ):
        assert key in before, key
    assert before["port"] == monitored.port
    assert before["max_payload"] == 1024 * 1024
    assert {"config", "limits", "stats"} <= set(before["jetstream"])
    assert set(before["jetstream"]["stats"]) >= {
        "memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets", "api"}
    nc = await nats.connect(monitored.url, name="varz-test")
    try:
        sub = await nc.subscribe("m.x")
        for _ in range(3):
            await nc.publish("m.x", b"12345")
        for _ in range(3):
            await sub.next_msg(2)
        varz = _get(monitored, "/varz")
        assert varz["connections"] == 1
        assert varz["total_connections"] >= 1
        assert varz["in_msgs"] - before["in_msgs"] == 3
        assert varz["out_msgs"] - before["out_msgs"] == 3
        assert varz["in_bytes"] - before["in_bytes"] == 15
        assert varz["subscriptions"] >= 1
    finally:
        await nc.close()


async def test_connz_lists_clients(monitored: ServerProcess) -> None:
    nc = await nats.connect(monitored.url, name="connz-test")
    try:
        await nc.subscribe("c.1")
        await nc.subscribe("c.2")
        await nc.publish("c.1", b"abc")
        await nc.flush()
        # nats-server fills a connection's counters in /connz a moment after a flush's PONG
        # (seen once in 2,600 tests: subscriptions 0): read until they settle, bounded
        for _ in range(50):
            connz = _get(monitored, "/connz")
            conns = connz["connections"]
            if len(conns) == 1 and conns[0]["subscriptions"] == 2 and conns[0]["out_msgs"] == 1:
                break
            await asyncio.sleep(0.05)
        assert connz["num_connections"] == 1
        assert connz["total"] == 1
        (conn,) = connz["connections"]
        assert conn["name"] == "connz-test"
        assert conn["lang"] == "python3"
        assert conn["ip"] == "127.0.0.1"
        assert conn["subscriptions"] == 2
        assert conn["in_msgs"] == 1
        assert conn["in_bytes"] == 3
        assert conn["out_msgs"] == 1
        for key in ("cid", "port", "version", "out_bytes"):
            assert key in conn
    finally:
        await nc.close()


# the fields nats-server's /jsz always has (JSInfo and its JetStreamStats)
JSZ_FIELDS = {
    "server_id", "now", "config", "limits", "memory", "storage", "reserved_memory",
    "reserved_storage", "accounts", "ha_assets", "api", "streams", "consumers", "messages",
    "bytes", "total",
}
ACCOUNT_DETAIL_FIELDS = {
    "name", "id", "memory", "storage", "reserved_memory", "reserved_storage", "accounts",
    "ha_assets", "api",
}


async def test_jsz_reports_jetstream(monitored: ServerProcess, store_dir: Path) -> None:
    """/jsz: nats-server's fields, with the counts, the usage and the reservations
    (streams' max_bytes) following the streams, and one account's detail."""
    empty = _get(monitored, "/jsz")
    assert JSZ_FIELDS <= set(empty), JSZ_FIELDS - set(empty)
    assert (empty["streams"], empty["consumers"], empty["messages"]) == (0, 0, 0)
    nc = await nats.connect(monitored.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"], max_bytes=1_000_000)
        for _ in range(3):
            await js.publish("s.1", b"abc")
        await js.add_consumer("S", durable_name="C")
        stored = (await js.stream_info("S")).state.bytes
    finally:
        await nc.close()
    jsz = _get(monitored, "/jsz")
    assert JSZ_FIELDS <= set(jsz), JSZ_FIELDS - set(jsz)
    assert {k: jsz[k] for k in (
        "streams", "consumers", "messages", "bytes", "storage", "memory", "reserved_memory",
        "reserved_storage", "accounts", "ha_assets", "total",
    )} == {
        "streams": 1, "consumers": 1, "messages": 3, "bytes": stored, "storage": stored,
        "memory": 0, "reserved_memory": 0, "reserved_storage": 1_000_000, "accounts": 1,
        "ha_assets": 0, "total": 1,
    }
    assert stored > 0
    assert jsz["api"]["errors"] == 0
    assert jsz["api"]["total"] >= empty["api"]["total"] + 3  # stream create, consumer create, info
    assert jsz["api"]["level"] >= 1
    assert {"max_memory", "max_storage", "store_dir", "sync_interval"} <= set(jsz["config"])
    assert jsz["config"]["store_dir"].startswith(str(store_dir))
    assert isinstance(jsz["limits"], dict)
    assert jsz["server_id"] == _get(monitored, "/varz")["server_id"]
    assert jsz["now"].endswith("Z") and jsz["now"] > empty["now"]
    (detail,) = _get(monitored, "/jsz?accounts=true")["account_details"]
    assert ACCOUNT_DETAIL_FIELDS <= set(detail), ACCOUNT_DETAIL_FIELDS - set(detail)
    assert (detail["name"], detail["id"], detail["storage"]) == ("$G", "$G", stored)


def test_unknown_path_is_404(monitored: ServerProcess) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"http://127.0.0.1:{monitored.monitor_port}/nope", timeout=5)
    assert info.value.code == 404
