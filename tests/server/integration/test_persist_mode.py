"""`persist_mode` (nats-server 2.12, API level 2) on both servers: the config,
its checks and the level it needs. What `async` changes (acks before the
sync under `sync_always`) is tested in tests/server/unit/test_async_persist_acks.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from js_helpers import api, err
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess


@pytest.fixture
async def nc(shared_server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(shared_server.url, max_reconnect_attempts=0)
    try:
        yield client
    finally:
        await client.close()


async def _create(nc: NATS, name: str, **config: Any) -> dict[str, Any]:
    return await api(nc, f"STREAM.CREATE.{name}", {"name": name, "subjects": [name.lower()], **config})


async def test_async_is_echoed_and_needs_level_2(nc: NATS) -> None:
    created = await _create(nc, "PA", persist_mode="async")
    assert created["config"]["persist_mode"] == "async"
    assert created["config"]["metadata"]["_nats.req.level"] == "2"
    ack = await nc.request("pa", b"x", timeout=5)
    assert ack.data == b'{"stream":"PA","seq":1}'
    default = await _create(nc, "PD", persist_mode="default")
    assert "persist_mode" not in default["config"]  # the default is omitted
    assert default["config"]["metadata"]["_nats.req.level"] == "0"


@pytest.mark.parametrize(
    ("config", "description"),
    [
        ({"storage": "memory"}, "async persist mode is only supported on file storage"),
        ({"allow_atomic": True}, "async persist mode is not supported with atomic batch publish"),
    ],
)
async def test_async_refusals(nc: NATS, config: dict[str, Any], description: str) -> None:
    resp = await _create(nc, "PX", persist_mode="async", **config)
    assert err(resp) == (500, 10052, description)


async def test_unknown_mode_is_refused(nc: NATS) -> None:
    resp = await _create(nc, "PU", persist_mode="sometimes")
    assert resp["error"]["err_code"] == 10025
    assert "can not unmarshal" in resp["error"]["description"]


async def test_mode_cannot_change(nc: NATS) -> None:
    created = await _create(nc, "PC")
    resp = await api(nc, "STREAM.UPDATE.PC", {**created["config"], "persist_mode": "async"})
    assert err(resp) == (500, 10052, "stream configuration update can not change persist mode")
    created = await _create(nc, "PC2", persist_mode="async")
    config = {k: v for k, v in created["config"].items() if k != "persist_mode"}
    resp = await api(nc, "STREAM.UPDATE.PC2", config)
    assert err(resp) == (500, 10052, "stream configuration update can not change persist mode")
