"""Cron message schedules and `Nats-Schedule-Time-Zone` on both servers via nats-py.

One server per kind for the module, one stream per test. Firing is checked with
`* * * * * *` (every second): the wait is bounded by the fetch timeout. The
walk itself (DST edges, rollovers) is tested on fixed times in
tests/server/unit/test_cron.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Any

import nats
import pytest
from js_helpers import api
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess


@pytest.fixture
async def nc(shared_server: ServerProcess, request: pytest.FixtureRequest) -> AsyncIterator[NATS]:
    client = await nats.connect(shared_server.url, max_reconnect_attempts=0)
    name = request.node.name.split("[")[0].removeprefix("test_")[:20].upper()
    try:
        await api(client, f"STREAM.DELETE.{name}")
        created = await api(client, f"STREAM.CREATE.{name}", {
            "name": name, "subjects": [f"{name}.>"], "allow_msg_schedules": True})
        assert "error" not in created, created
        client._test_stream = name  # type: ignore[attr-defined]
        yield client
    finally:
        await api(client, f"STREAM.DELETE.{name}")
        await client.close()


def _stream(nc: NATS) -> str:
    return str(nc._test_stream)  # type: ignore[attr-defined]


async def _pub(nc: NATS, subject: str, headers: dict[str, str]) -> Any:
    return json.loads((await nc.request(subject, b"x", headers=headers, timeout=5)).data)


def _valid_and_invalid() -> list[tuple[dict[str, str], int | None]]:
    never = "0 0 0 1 1 *"  # valid, not due soon
    return [
        ({"Nats-Schedule": never}, None),
        ({"Nats-Schedule": "0 0 12 * * MON-fri"}, None),
        ({"Nats-Schedule": "*/15 0-30/5 ? 1,15 jan,Jul *"}, None),
        ({"Nats-Schedule": "5/20 * * * * *"}, None),
        ({"Nats-Schedule": "0 0 0 29 2 *"}, None),  # leap days: within five years
        ({"Nats-Schedule": "@yearly"}, None),
        ({"Nats-Schedule": "@annually"}, None),
        ({"Nats-Schedule": "@monthly"}, None),
        ({"Nats-Schedule": "@weekly"}, None),
        ({"Nats-Schedule": "@daily"}, None),
        ({"Nats-Schedule": "@midnight"}, None),
        ({"Nats-Schedule": "@hourly"}, None),
        ({"Nats-Schedule": never, "Nats-Schedule-Time-Zone": "America/New_York"}, None),
        ({"Nats-Schedule": "@daily", "Nats-Schedule-Time-Zone": "UTC"}, None),
        ({"Nats-Schedule": "0 0 * * *"}, 10189),  # five fields
        ({"Nats-Schedule": "0 0 0 * * * *"}, 10189),
        ({"Nats-Schedule": "60 * * * * *"}, 10189),
        ({"Nats-Schedule": "* 60 * * * *"}, 10189),
        ({"Nats-Schedule": "* * 24 * * *"}, 10189),
        ({"Nats-Schedule": "* * * 0 * *"}, 10189),
        ({"Nats-Schedule": "* * * 32 * *"}, 10189),
        ({"Nats-Schedule": "* * * * 13 *"}, 10189),
        ({"Nats-Schedule": "* * * * * 7"}, 10189),
        ({"Nats-Schedule": "* * * * * sunday"}, 10189),
        ({"Nats-Schedule": "5-1 * * * * *"}, 10189),
        ({"Nats-Schedule": "* * * * * sat-sun"}, 10189),  # no wrapping ranges
        ({"Nats-Schedule": "1-2-3 * * * * *"}, 10189),
        ({"Nats-Schedule": "*/0 * * * * *"}, 10189),
        ({"Nats-Schedule": "1/2/3 * * * * *"}, 10189),
        ({"Nats-Schedule": "-1 * * * * *"}, 10189),
        ({"Nats-Schedule": "0 0 0 30 2 *"}, 10189),  # never: past five years
        ({"Nats-Schedule": "@every_day"}, 10189),
        ({"Nats-Schedule": "@hourly", "Nats-Schedule-Time-Zone": "Nowhere/Special"}, 10223),
        ({"Nats-Schedule": "@hourly", "Nats-Schedule-Time-Zone": ""}, 10223),
        ({"Nats-Schedule": "@hourly", "Nats-Schedule-Time-Zone": "../etc/passwd"}, 10223),
        ({"Nats-Schedule": "@every 1m", "Nats-Schedule-Time-Zone": "Europe/Amsterdam"}, 10189),
        ({"Nats-Schedule-Time-Zone": "Nowhere/Special"}, 10223),  # checked without a pattern
    ]


async def test_patterns_and_zones_accepted_and_refused(nc: NATS) -> None:
    name = _stream(nc)
    for i, (headers, err_code) in enumerate(_valid_and_invalid()):
        headers = {**headers, "Nats-Schedule-Target": f"{name}.out"} if "Nats-Schedule" in headers \
            else headers
        answer = await _pub(nc, f"{name}.s{i}", headers)
        got = answer.get("error", {}).get("err_code")
        assert got == err_code, (headers, answer)
    # a valid zone without a pattern is an ordinary message
    answer = await _pub(nc, f"{name}.plain", {"Nats-Schedule-Time-Zone": "Asia/Tokyo"})
    assert "error" not in answer, answer
    off = await api(nc, "STREAM.CREATE.OFF" + name, {"name": "OFF" + name, "subjects": ["off.>"]})
    assert "error" not in off, off
    try:
        for headers in ({"Nats-Schedule": "@hourly", "Nats-Schedule-Target": "off.t"},
                        {"Nats-Schedule-Time-Zone": "Nowhere/Special"},
                        {"Nats-Schedule": "61 * * * * *", "Nats-Schedule-Target": "off.t"}):
            answer = await _pub(nc, "off.s", headers)
            assert answer["error"]["err_code"] == 10188, (headers, answer)
    finally:
        await api(nc, "STREAM.DELETE.OFF" + name)


def _parse_next(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.mark.parametrize("zone, offset", [(None, "Z"), ("Asia/Kolkata", "+05:30")])
async def test_every_second_fires_with_the_next_time_in_the_zone(
    nc: NATS, zone: str | None, offset: str
) -> None:
    name = _stream(nc)
    js = nc.jetstream()
    sub = await js.pull_subscribe(f"{name}.out", durable="OUT", stream=name)
    headers = {"Nats-Schedule": "* * * * * *", "Nats-Schedule-Target": f"{name}.out",
               "Order": "1001"}
    if zone is not None:
        headers["Nats-Schedule-Time-Zone"] = zone
    ack = await _pub(nc, f"{name}.tick", headers)
    assert ack == {"stream": name, "seq": 1}
    got = []
    while len(got) < 2:
        got.extend(await sub.fetch(2 - len(got), timeout=10))
    await api(nc, f"STREAM.PURGE.{name}", {"filter": f"{name}.tick"})  # stop it
    for msg in got:
        hdrs = dict(msg.headers or {})
        nxt = hdrs.pop("Nats-Schedule-Next")
        assert hdrs == {"Order": "1001", "Nats-Scheduler": f"{name}.tick"}
        assert nxt.endswith(offset) and "." not in nxt, nxt
        when = _parse_next(nxt)
        assert when.microsecond == 0
        produced = msg.metadata.timestamp
        assert abs((when - produced).total_seconds()) < 3, (nxt, produced)
    first, second = (_parse_next(dict(m.headers or {})["Nats-Schedule-Next"]) for m in got)
    assert second > first
    assert first > datetime.now(timezone.utc).replace(year=2020)
