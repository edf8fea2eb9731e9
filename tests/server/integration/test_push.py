"""Push consumers: deliver_subject, deliver_group, idle heartbeats, flow control, ordered
consumers (and their recovery from a gap) — bundled server and real nats-server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

pytestmark = pytest.mark.asyncio

MS = 1_000_000


async def create(nc: NATS, name: str, **cfg: Any) -> dict[str, Any]:
    body = {"stream_name": "S", "config": {"durable_name": name, **cfg}}
    msg = await nc.request(f"$JS.API.CONSUMER.CREATE.S.{name}", json.dumps(body).encode(), timeout=2)
    out = json.loads(msg.data)
    assert "error" not in out, out
    return out  # type: ignore[no-any-return]


def status(msg: Msg) -> str | None:
    return (msg.headers or {}).get("Status")


async def test_durable_push_with_acks(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    for i in range(5):
        await js.publish(f"s.{i}", b"%d" % i)
    sub = await js.subscribe("s.>", durable="D", manual_ack=True)
    got = [await sub.next_msg(timeout=2) for _ in range(5)]
    assert [m.subject for m in got] == [f"s.{i}" for i in range(5)]
    assert [m.metadata.num_pending for m in got] == [4, 3, 2, 1, 0]
    for m in got:
        await m.ack_sync()
    await js.publish("s.9", b"live")
    live = await sub.next_msg(timeout=2)
    assert live.subject == "s.9" and live.metadata.sequence.stream == 6
    info = await js.consumer_info("S", "D")
    assert info.push_bound is True and info.ack_floor.stream_seq == 5


async def test_deliver_group_shares_messages(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    seen: list[tuple[str, int]] = []
    done = asyncio.Event()

    def handler(tag: str) -> Any:
        async def cb(msg: Msg) -> None:
            seen.append((tag, msg.metadata.sequence.stream))
            await msg.ack()
            if len(seen) == 20:
                done.set()

        return cb

    await nc.subscribe("dq", queue="grp", cb=handler("a"))
    await nc.subscribe("dq", queue="grp", cb=handler("b"))
    await create(nc, "Q", deliver_subject="dq", deliver_group="grp", ack_policy="explicit")
    for i in range(20):
        await js.publish("s.x", b"%d" % i)
    await asyncio.wait_for(done.wait(), 5)
    assert sorted(s for _, s in seen) == list(range(1, 21))


async def test_idle_heartbeat(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    await js.publish("s.1", b"one")
    sub = await nc.subscribe("hb.in")
    await create(nc, "H", deliver_subject="hb.in", idle_heartbeat=200 * MS, ack_policy="none")
    first = await sub.next_msg(timeout=2)
    assert first.subject == "s.1"
    hb = await sub.next_msg(timeout=2)
    assert status(hb) == "100" and (hb.headers or {}).get("Description") == "Idle Heartbeat"
    assert (hb.headers or {})["Nats-Last-Consumer"] == "1"
    assert (hb.headers or {})["Nats-Last-Stream"] == "1"


async def test_flow_control_requests_are_answered(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    payload = b"z" * 8192
    for _ in range(400):
        await js.publish("s.big", payload)
    got: list[int] = []
    fc_requests = 0
    done = asyncio.Event()

    async def cb(msg: Msg) -> None:
        nonlocal fc_requests
        st = status(msg)
        if st == "100":
            if msg.reply:
                fc_requests += 1
                await nc.publish(msg.reply, b"")
            return
        got.append(msg.metadata.sequence.stream)
        if len(got) == 400:
            done.set()

    await nc.subscribe("fc.in", cb=cb)
    await create(nc, "FC", deliver_subject="fc.in", flow_control=True, idle_heartbeat=500 * MS, ack_policy="none")
    await asyncio.wait_for(done.wait(), 10)
    assert got == list(range(1, 401))
    assert fc_requests >= 1


async def test_ordered_consumer_reads_everything(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    futs = [await js.publish_async(f"s.{i % 7}", b"%d" % i) for i in range(3000)]
    await asyncio.gather(*futs)
    sub = await js.subscribe("s.>", ordered_consumer=True)
    seqs = [(await sub.next_msg(timeout=5)).metadata.sequence.stream for _ in range(3000)]
    assert seqs == list(range(1, 3001))
    info = await sub.consumer_info()
    assert info.config.mem_storage is True and str(info.config.ack_policy) in ("none", "AckPolicy.NONE")
    assert info.config.flow_control is True


async def test_ordered_consumer_recovers_from_gap(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    for i in range(10):
        await js.publish("s.a", b"%d" % i)
    sub = await js.subscribe("s.a", ordered_consumer=True)
    first = [await sub.next_msg(timeout=2) for _ in range(5)]
    assert [m.metadata.sequence.stream for m in first] == [1, 2, 3, 4, 5]
    name = (await sub.consumer_info()).name
    # Rewind the server-side consumer: its delivery sequence restarts at 1, which the
    # client sees as a gap and answers by re-creating the consumer after stream seq 5.
    reply = await nc.request(f"$JS.API.CONSUMER.RESET.S.{name}", json.dumps({"seq": 1}).encode(), timeout=2)
    assert json.loads(reply.data)["reset_seq"] == 1
    rest = []
    while len(rest) < 5:
        rest.append((await sub.next_msg(timeout=5)).metadata.sequence.stream)
    # without the client's recovery the rewound consumer would hand out 1, 2, 3, ...
    assert rest == [6, 7, 8, 9, 10]


async def test_replay_original_keeps_the_spacing(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"])
    await js.publish("s.1", b"first")
    await asyncio.sleep(0.5)
    await js.publish("s.2", b"second")
    sub = await nc.subscribe("replay.in")
    await create(nc, "RO", deliver_subject="replay.in", replay_policy="original", ack_policy="none")
    loop = asyncio.get_running_loop()
    first = await sub.next_msg(timeout=2)
    t1 = loop.time()
    second = await sub.next_msg(timeout=3)
    gap = loop.time() - t1
    assert (first.data, second.data) == (b"first", b"second")
    assert 0.35 <= gap <= 1.5
