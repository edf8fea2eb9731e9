"""Durable consumer state survives a SIGKILL and a clean restart (file storage):
delivered, ack floor, pending acks and redelivery counts. Bundled and real nats-server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import nats.errors
import pytest
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.asyncio

MS = 1_000_000


async def connect(server: ServerProcess) -> NATS:
    return await nats.connect(server.url, connect_timeout=5, max_reconnect_attempts=0)


async def api(nc: NATS, subject: str, body: Any = None) -> dict[str, Any]:
    data = b"" if body is None else json.dumps(body).encode()
    msg = await nc.request("$JS.API." + subject, data, timeout=3)
    return json.loads(msg.data)  # type: ignore[no-any-return]


def state(info: dict[str, Any]) -> dict[str, Any]:
    return {
        "delivered": (info["delivered"]["consumer_seq"], info["delivered"]["stream_seq"]),
        "ack_floor": (info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"]),
        "num_ack_pending": info["num_ack_pending"],
        "num_redelivered": info["num_redelivered"],
        "num_pending": info["num_pending"],
    }


@pytest.mark.parametrize("how", ["kill", "stop"])
async def test_durable_state_survives_restart(server: ServerProcess, server_kind: str, how: str) -> None:
    nc = await connect(server)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"], storage="file")
    for i in range(10):
        await js.publish(f"s.{i % 2}", b"%d" % i)
    r = await api(nc, "CONSUMER.CREATE.S.D", {"stream_name": "S", "config": {"durable_name": "D", "ack_policy": "explicit", "ack_wait": 1000 * MS}})
    assert "error" not in r
    sub = await js.pull_subscribe_bind("D", "S")
    msgs = await sub.fetch(6)
    for m in msgs[:3]:
        await m.ack_sync()
    await msgs[4].ack_sync()
    await nc.request(msgs[3].reply, b"-NAK", timeout=2)
    again = await sub.fetch(1)
    assert again[0].metadata.sequence.stream == 4 and again[0].metadata.num_delivered == 2
    before = state(await api(nc, "CONSUMER.INFO.S.D"))
    assert before == {
        "delivered": (7, 6),
        "ack_floor": (3, 3),
        "num_ack_pending": 2,
        "num_redelivered": 1,
        "num_pending": 4,
    }
    # One more round trip: the bundled server writes state changes within the
    # loop turn after them (here: the redelivery), before it answers the PING.
    await nc.flush()
    await nc.close()
    if how == "kill" and server_kind == "nats-server":
        # nats-server writes consumer state behind the acks (a flusher); give it the
        # moment it needs. The bundled server writes it within the loop turn.
        await asyncio.sleep(1.5)
    if how == "kill":
        server.kill()
    server.restart()

    nc = await connect(server)
    try:
        js = nc.jetstream()
        after = state(await api(nc, "CONSUMER.INFO.S.D"))
        assert after == before
        # the two unacked messages come back after the ack wait, with their counts
        sub = await js.pull_subscribe_bind("D", "S")
        seen: list[tuple[int, int]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 6
        while len(seen) < 6 and loop.time() < deadline:
            try:
                batch = await sub.fetch(6 - len(seen), timeout=1)
            except nats.errors.TimeoutError:
                continue
            for m in batch:
                seen.append((m.metadata.sequence.stream, m.metadata.num_delivered))
                await m.ack_sync()
        assert sorted(seen) == [(4, 3), (6, 2), (7, 1), (8, 1), (9, 1), (10, 1)]
        final = state(await api(nc, "CONSUMER.INFO.S.D"))
        assert final["ack_floor"][1] == 10 and final["num_ack_pending"] == 0
    finally:
        await nc.close()


async def test_deleted_consumer_stays_deleted(server: ServerProcess) -> None:
    nc = await connect(server)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"], storage="file")
    for name in ("A", "B"):
        await api(nc, f"CONSUMER.CREATE.S.{name}", {"stream_name": "S", "config": {"durable_name": name}})
    await api(nc, "CONSUMER.DELETE.S.A")
    await nc.close()
    server.kill()
    server.restart()
    nc = await connect(server)
    try:
        names = await api(nc, "CONSUMER.NAMES.S")
        assert names["consumers"] == ["B"]
    finally:
        await nc.close()
