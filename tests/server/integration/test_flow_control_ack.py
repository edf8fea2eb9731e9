"""Ack policy `flow_control` (nats-server 2.14, API level 4) on both servers.

A push consumer whose flow control answers are its acks: the client answers
a ``100 FlowControl Request`` with ``Nats-Last-Consumer`` /
``Nats-Last-Stream`` of the last message it processed, which acknowledges
everything up to it (as ack all). nats-py answers flow control without those
headers, so the tests read the deliver subject with a plain subscription and
answer as nats-server's own sourcing does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from js_helpers import api, err
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from jetstream_testing.process import ServerProcess

S = 1_000_000_000


@pytest.fixture
async def nc(shared_server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(shared_server.url, max_reconnect_attempts=0)
    try:
        yield client
    finally:
        await client.close()


async def _consumer(nc: NATS, stream: str, **config: Any) -> dict[str, Any]:
    body = {"durable_name": "C", "ack_policy": "flow_control", **config}
    return await api(nc, f"CONSUMER.CREATE.{stream}.C", {"stream_name": stream, "config": body})


async def test_defaults_and_level(nc: NATS) -> None:
    await api(nc, "STREAM.CREATE.FD", {"name": "FD", "subjects": ["fd"]})
    # nats-server sets flow control and a 1 s heartbeat (a given one is replaced)
    resp = await _consumer(nc, "FD", deliver_subject="fd.deliver", idle_heartbeat=5 * S)
    config = resp["config"]
    assert config["ack_policy"] == "flow_control"
    assert config["flow_control"] is True and config["idle_heartbeat"] == S
    assert "ack_wait" not in config
    assert config["max_ack_pending"] == 1000 and config["max_deliver"] == -1
    assert config["metadata"]["_nats.req.level"] == "4"


@pytest.mark.parametrize(
    ("config", "code"),
    [
        ({}, 10218),  # pull
        ({"deliver_subject": "fe.d", "max_ack_pending": -1}, 10220),
        ({"deliver_subject": "fe.d", "ack_wait": 30 * S}, 10221),
        ({"deliver_subject": "fe.d", "backoff": [S, 2 * S], "max_deliver": 5}, 10221),
        ({"deliver_subject": "fe.d", "max_deliver": 1}, 10222),
    ],
)
async def test_refusals(nc: NATS, config: dict[str, Any], code: int) -> None:
    await api(nc, "STREAM.CREATE.FE", {"name": "FE", "subjects": ["fe"]})
    resp = await _consumer(nc, "FE", **config)
    assert resp["error"]["err_code"] == code, resp


class Reader:
    """The deliver subject: messages with their sequences, flow control requests."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Msg] = asyncio.Queue()

    async def on_msg(self, msg: Msg) -> None:
        await self.queue.put(msg)

    async def next(self, *, skip_heartbeats: bool = True) -> Msg:
        while True:
            msg = await asyncio.wait_for(self.queue.get(), timeout=5)
            status = (msg.headers or {}).get("Status")
            if skip_heartbeats and status == "100" and not msg.reply:
                continue
            return msg


def _seqs(msg: Msg) -> tuple[int, int]:
    """(stream, consumer) sequence from the ack reply ``$JS.ACK.<s>.<c>.<n>.<sseq>.<dseq>...``."""
    parts = msg.reply.split(".")
    return int(parts[5]), int(parts[6])


def _is_fc(msg: Msg) -> bool:
    return bool(msg.reply) and (msg.headers or {}).get("Description") == "FlowControl Request"


async def _answer(nc: NATS, fc: Msg, sseq: int, dseq: int) -> None:
    await nc.publish(fc.reply, b"", headers={"Nats-Last-Consumer": str(dseq),
                                             "Nats-Last-Stream": str(sseq)})
    await nc.flush()


@pytest.mark.parametrize("retention", ["limits", "workqueue"])
async def test_flow_control_answers_acknowledge(nc: NATS, retention: str) -> None:
    """Up to max_ack_pending messages, then a flow control request; its answer
    acknowledges them; acks on the ack subject do nothing; the idle heartbeat
    brings a request for what is still unacknowledged."""
    name = f"FA{retention}"
    await api(nc, f"STREAM.CREATE.{name}", {"name": name, "subjects": [name.lower()],
                                            "retention": retention})
    for i in range(5):
        await nc.request(name.lower(), b"%d" % i, timeout=5)
    reader = Reader()
    deliver = nc.new_inbox()
    await nc.subscribe(deliver, cb=reader.on_msg)
    await nc.flush()
    created = await _consumer(nc, name, deliver_subject=deliver, max_ack_pending=3)
    assert "error" not in created, created
    first = [await reader.next() for _ in range(3)]
    assert [_seqs(m) for m in first] == [(1, 1), (2, 2), (3, 3)]
    fc = await reader.next()
    assert _is_fc(fc), (fc.headers, fc.data)
    await _answer(nc, fc, 3, 3)
    rest = [await reader.next() for _ in range(2)]
    assert [_seqs(m) for m in rest] == [(4, 4), (5, 5)]
    await nc.publish(rest[-1].reply, b"+ACK")  # no one listens: not an ack
    await nc.flush()
    info = await api(nc, f"CONSUMER.INFO.{name}.C")
    assert info["ack_floor"]["stream_seq"] == 3 and info["num_ack_pending"] == 2, info
    fc = await reader.next()  # with the idle heartbeat (1 s)
    assert _is_fc(fc), (fc.headers, fc.data)
    await _answer(nc, fc, 5, 5)
    info = await api(nc, f"CONSUMER.INFO.{name}.C")
    assert info["ack_floor"]["stream_seq"] == 5 and info["num_ack_pending"] == 0, info
    state = (await api(nc, f"STREAM.INFO.{name}"))["state"]
    assert state["messages"] == (5 if retention == "limits" else 0)


async def test_answer_without_deliveries_acknowledges_nothing(nc: NATS) -> None:
    await api(nc, "STREAM.CREATE.FN", {"name": "FN", "subjects": ["fn"]})
    for i in range(2):
        await nc.request("fn", b"%d" % i, timeout=5)
    reader = Reader()
    deliver = nc.new_inbox()
    await nc.subscribe(deliver, cb=reader.on_msg)
    await nc.flush()
    await _consumer(nc, "FN", deliver_subject=deliver, max_ack_pending=2)
    assert [_seqs(await reader.next()) for _ in range(2)] == [(1, 1), (2, 2)]
    fc = await reader.next()
    assert _is_fc(fc)
    await _answer(nc, fc, 2, 0)  # consumer sequence 0: nothing
    info = await api(nc, "CONSUMER.INFO.FN.C")
    assert info["num_ack_pending"] == 2 and info["ack_floor"]["stream_seq"] == 0, info
    fc = await reader.next()  # still unacknowledged: another request with the heartbeat
    assert _is_fc(fc)
    heartbeat = await reader.next(skip_heartbeats=False)  # left unanswered: it is named
    assert heartbeat.headers is not None
    assert heartbeat.headers.get("Nats-Consumer-Stalled") == fc.reply, heartbeat.headers
    assert err(await api(nc, "CONSUMER.INFO.FN.X")) == (404, 10014, "consumer not found")
