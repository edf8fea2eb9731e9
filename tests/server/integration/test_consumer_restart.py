"""Durable consumer state survives a SIGKILL and a clean restart (file storage):
delivered, ack floor, pending acks and redelivery counts. Bundled and real nats-server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from nats.aio.client import Client as NATS
from waits import until

from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.asyncio

MS = 1_000_000


async def connect(server: ServerProcess) -> NATS:
    return await nats.connect(server.url, connect_timeout=5, max_reconnect_attempts=0)


async def api(nc: NATS, subject: str, body: Any = None) -> dict[str, Any]:
    data = b"" if body is None else json.dumps(body).encode()
    msg = await nc.request("$JS.API." + subject, data, timeout=3)
    return json.loads(msg.data)  # type: ignore[no-any-return]


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def nats_server_consumer_state(path: Path) -> dict[str, Any] | None:
    """What nats-server's consumer state file holds of `state()` (obs/<name>/o.dat,
    written atomically; store.go encodeConsumerState, version 2): all but
    num_pending, which it does not store. None while there is no such file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    assert data[1] == 2, f"consumer state version {data[1]}"
    pos = 2
    values = []
    for _ in range(5):  # ack floor (consumer, stream), delivered (consumer, stream), pending
        value, pos = _uvarint(data, pos)
        values.append(value)
    ack_consumer, ack_stream, delivered_consumer, delivered_stream, pending = values
    if pending:
        _base, pos = _uvarint(data, pos)  # a zigzag varint: only skipped
        for _ in range(3 * pending):
            _value, pos = _uvarint(data, pos)
    redelivered, pos = _uvarint(data, pos)
    return {
        "delivered": (delivered_consumer, delivered_stream),
        "ack_floor": (ack_consumer, ack_stream),
        "num_ack_pending": pending,
        "num_redelivered": redelivered,
    }


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
        # nats-server writes consumer state behind the acks (a flusher): wait until
        # its state file says what the API said. The bundled server writes it
        # within the loop turn.
        assert server.store_dir is not None
        state_file = Path(server.store_dir, "jetstream", "$G", "streams", "S", "obs", "D", "o.dat")
        stored = {k: v for k, v in before.items() if k != "num_pending"}
        await until(lambda: nats_server_consumer_state(state_file) == stored, 10,
                    "nats-server to write the consumer state")
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
