"""Message schedules (ADR-51, `allow_msg_schedules`) on both servers via nats-py.

Only schedules already due are fired here (an `@at` in the past), so the wait is
the server's scheduling delay, bounded by the fetch timeout; timing itself is
tested on a fake clock (tests/server/unit/test_schedule_timing.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from typing import Any

import nats
import pytest
from js_helpers import api as _api
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess


@pytest.fixture
async def nc(server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        created = await _api(client, "STREAM.CREATE.S", {
            "name": "S", "subjects": ["s.>"], "allow_msg_schedules": True, "allow_msg_ttl": True})
        assert created["config"]["allow_rollup_hdrs"] is True  # turned on for schedules
        await _api(client, "STREAM.CREATE.P", {"name": "P", "subjects": ["p.>"]})
        yield client
    finally:
        await client.close()



async def _pub(nc: NATS, subject: str, headers: dict[str, str], payload: bytes = b"x") -> Any:
    return json.loads((await nc.request(subject, payload, headers=headers, timeout=5)).data)


def _past() -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _refusals() -> list[tuple[str, dict[str, str], int]]:
    at = {"Nats-Schedule": f"@at {_past()}"}
    return [
        ("p.s", {**at, "Nats-Schedule-Target": "p.t"}, 10188),  # not on this stream
        ("p.s", {"Nats-Schedule": "bogus", "Nats-Schedule-Target": "p.t"}, 10188),
        ("s.s", {"Nats-Schedule": "bogus", "Nats-Schedule-Target": "s.t"}, 10189),
        ("s.s", {"Nats-Schedule": "@every 500ms", "Nats-Schedule-Target": "s.t"}, 10189),
        ("s.s", {**at, "Nats-Schedule-Time-Zone": "Europe/Amsterdam",
                 "Nats-Schedule-Target": "s.t"}, 10189),
        ("s.s", {**at, "Nats-Schedule-Time-Zone": "Nowhere/Special",
                 "Nats-Schedule-Target": "s.t"}, 10223),
        ("s.s", at, 10190),  # no target
        ("s.s", {**at, "Nats-Schedule-Target": "s.s"}, 10190),  # itself
        ("s.s", {**at, "Nats-Schedule-Target": "q.t"}, 10190),  # not in the stream
        ("s.s", {**at, "Nats-Schedule-Target": "s.*"}, 10190),
        ("s.s", {**at, "Nats-Schedule-Target": "s.t", "Nats-Schedule-TTL": "abc"}, 10191),
        ("s.s", {**at, "Nats-Schedule-Target": "s.t", "Nats-Schedule-Rollup": "all"}, 10192),
        ("s.s", {**at, "Nats-Schedule-Target": "s.t", "Nats-Schedule-Source": "s.t"}, 10203),
        ("s.s", {"Nats-Schedule-Next": "x"}, 10212),  # clients may only purge
        ("s.s", {"Nats-Scheduler": "s.q"}, 10212),
        ("s.s", {"Nats-Schedule-Next": "purge"}, 10212),  # ... naming the schedule
    ]


async def test_refused_schedules(nc: NATS) -> None:
    for subject, headers, err_code in _refusals():
        answer = await _pub(nc, subject, headers)
        assert answer["error"]["err_code"] == err_code, (subject, headers)
    assert (await _api(nc, "STREAM.INFO.S"))["state"]["messages"] == 0
    config = await _api(nc, "STREAM.CREATE.X", {"name": "X", "subjects": ["x.>"],
                                                "allow_msg_schedules": True, "discard": "new"})
    assert config["error"]["description"] == "message scheduling cannot use discard new"
    off = await _api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"],
                                            "allow_msg_ttl": True})
    assert off["error"]["description"] == "message schedules can not be disabled"


async def test_a_due_schedule_fires_once_and_is_purged(nc: NATS) -> None:
    js = nc.jetstream()
    sub = await js.pull_subscribe("s.out", durable="OUT", stream="S")
    ack = await _pub(nc, "s.sched", {"Nats-Schedule": f"@at {_past()}",
                                     "Nats-Schedule-Target": "s.out",
                                     "Nats-Schedule-TTL": "5m", "Order": "1001"}, b"payload")
    assert ack == {"stream": "S", "seq": 1}
    (msg,) = await sub.fetch(1, timeout=10)
    assert (msg.subject, msg.data) == ("s.out", b"payload")
    assert dict(msg.headers or {}) == {"Order": "1001", "Nats-Scheduler": "s.sched",
                                       "Nats-Schedule-Next": "purge", "Nats-TTL": "5m"}
    info = await _api(nc, "STREAM.INFO.S", {"subjects_filter": ">"})
    assert info["state"]["subjects"] == {"s.out": 1}  # the schedule itself was purged


async def test_schedule_source(nc: NATS) -> None:
    js = nc.jetstream()
    sub = await js.pull_subscribe("s.out", durable="OUT", stream="S")
    await nc.request("s.latest", b"the latest value", headers={"Kind": "reading"}, timeout=5)
    await _pub(nc, "s.sched", {"Nats-Schedule": f"@at {_past()}", "Nats-Schedule-Target": "s.out",
                               "Nats-Schedule-Source": "s.latest"}, b"fallback")
    (msg,) = await sub.fetch(1, timeout=10)
    assert msg.data == b"the latest value"
    assert (msg.headers or {}).get("Kind") == "reading"


async def test_a_schedule_survives_a_restart(server: ServerProcess) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await _api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"],
                                           "allow_msg_schedules": True})
        soon = (datetime.now(timezone.utc) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
        await _pub(nc, "s.sched", {"Nats-Schedule": f"@at {soon}", "Nats-Schedule-Target": "s.out"})
    finally:
        await nc.close()
    server.restart()
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        sub = await nc.jetstream().pull_subscribe("s.out", durable="OUT", stream="S")
        (msg,) = await sub.fetch(1, timeout=10)
        assert (msg.headers or {}).get("Nats-Scheduler") == "s.sched"
    finally:
        await nc.close()
