"""The pinned / unpinned advisories of a `pinned_client` priority group, on both servers.

``$JS.EVENT.ADVISORY.CONSUMER.PINNED.<stream>.<consumer>`` when a pull
request gets a pin id, ``...UNPINNED...`` when it is taken away
(``$JS.API.CONSUMER.UNPIN``: reason ``admin``) or lapses after
`priority_timeout` (reason ``timeout``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from js_helpers import api
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess

S = 1_000_000_000
PINNED = "$JS.EVENT.ADVISORY.CONSUMER.PINNED.PA.C"
UNPINNED = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.PA.C"


@pytest.fixture
async def nc(shared_server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(shared_server.url, max_reconnect_attempts=0)
    try:
        yield client
    finally:
        await client.close()


async def _pull(nc: NATS) -> str:
    """One message for group A; its Nats-Pin-Id. (A delivered message carries
    its stream subject, so nats-py's request() could not match it: an inbox.)"""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, max_msgs=1)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.PA.C",
                     json.dumps({"batch": 1, "expires": 2 * S, "group": "A"}).encode(), reply=inbox)
    msg = await sub.next_msg(timeout=5)
    assert msg.headers and "Nats-Pin-Id" in msg.headers, (msg.headers, msg.data)
    return str(msg.headers["Nats-Pin-Id"])


async def test_pinned_and_unpinned(nc: NATS) -> None:
    await api(nc, "STREAM.CREATE.PA", {"name": "PA", "subjects": ["pa"]})
    for i in range(3):
        await nc.request("pa", b"%d" % i, timeout=5)
    created = await api(nc, "CONSUMER.CREATE.PA.C", {"stream_name": "PA", "config": {
        "durable_name": "C", "ack_policy": "none", "priority_policy": "pinned_client",
        "priority_groups": ["A"], "priority_timeout": S}})
    assert "error" not in created, created
    events: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    async def on_event(msg: Any) -> None:
        await events.put((msg.subject, json.loads(msg.data)))

    await nc.subscribe(PINNED, cb=on_event)
    await nc.subscribe(UNPINNED, cb=on_event)
    await nc.flush()

    async def next_event() -> tuple[str, dict[str, Any]]:
        return await asyncio.wait_for(events.get(), timeout=5)

    def check(event: dict[str, Any], kind: str, **fields: str) -> None:
        assert event["type"] == f"io.nats.jetstream.advisory.v1.consumer_group_{kind}"
        assert event["id"] and event["timestamp"].endswith("Z")
        assert (event["account"], event["stream"], event["consumer"], event["group"]) == (
            "$G", "PA", "C", "A")
        for key, value in fields.items():
            assert event[key] == value, event

    pin = await _pull(nc)
    subject, event = await next_event()
    assert subject == PINNED
    check(event, "pinned", pinned_id=pin)
    assert (await api(nc, "CONSUMER.UNPIN.PA.C", {"group": "A"})).get("error") is None
    subject, event = await next_event()
    assert subject == UNPINNED
    check(event, "unpinned", reason="admin")
    second = await _pull(nc)
    assert second != pin
    subject, event = await next_event()
    assert subject == PINNED
    check(event, "pinned", pinned_id=second)
    subject, event = await next_event()  # no request within priority_timeout (1 s)
    assert subject == UNPINNED
    check(event, "unpinned", reason="timeout")
