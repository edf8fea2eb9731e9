"""Acks and redelivery: +ACK, -NAK (delay), +WPI, +TERM, +NXT, ack policies, ack_wait,
backoff, max_deliver, retention on ack — bundled server and real nats-server.

Timing: ack waits of 0.5-1 s, bounded waits only (no sleep loops)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

pytestmark = pytest.mark.asyncio

MS = 1_000_000


async def seed(js: JetStreamContext, n: int = 3, **kw: Any) -> None:
    await js.add_stream(name="S", subjects=["s.>"], **kw)
    for i in range(n):
        await js.publish(f"s.{i}", b"m%d" % i)


async def create(nc: NATS, name: str, **cfg: Any) -> dict[str, Any]:
    body = {"stream_name": "S", "config": {"durable_name": name, "ack_policy": "explicit", **cfg}}
    msg = await nc.request(f"$JS.API.CONSUMER.CREATE.S.{name}", json.dumps(body).encode(), timeout=2)
    out = json.loads(msg.data)
    assert "error" not in out, out
    return out  # type: ignore[no-any-return]


async def info(nc: NATS, name: str) -> dict[str, Any]:
    msg = await nc.request(f"$JS.API.CONSUMER.INFO.S.{name}", b"", timeout=2)
    return json.loads(msg.data)  # type: ignore[no-any-return]


async def pull(nc: NATS, name: str, batch: int, expires_ms: int = 300) -> list[Msg]:
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    body = {"batch": batch, "expires": expires_ms * MS}
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}", json.dumps(body).encode(), reply=inbox)
    out: list[Msg] = []
    try:
        while len(out) < batch:
            msg = await sub.next_msg(timeout=expires_ms / 1000 + 1)
            if msg.headers and msg.headers.get("Status"):
                break
            out.append(msg)
    finally:
        await sub.unsubscribe()
    return out


def seqs(msgs: list[Msg]) -> list[tuple[int, int]]:
    """(stream_seq, delivery count) per message."""
    return [(m.metadata.sequence.stream, m.metadata.num_delivered) for m in msgs]


async def test_ack_moves_floor_and_ack_sync_gets_reply(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3)
    await create(nc, "A")
    msgs = await pull(nc, "A", 3)
    await msgs[1].ack_sync()  # out of order: floor stays
    r = await info(nc, "A")
    assert r["ack_floor"]["stream_seq"] == 0 and r["num_ack_pending"] == 2
    reply = await nc.request(msgs[0].reply, b"+ACK", timeout=2)
    assert reply.data == b""
    r = await info(nc, "A")
    assert r["ack_floor"] == {**r["ack_floor"], "consumer_seq": 2, "stream_seq": 2}
    await nc.request(msgs[2].reply, b"", timeout=2)  # empty payload is an ack
    r = await info(nc, "A")
    assert r["ack_floor"]["stream_seq"] == 3 and r["num_ack_pending"] == 0


async def test_redelivery_after_ack_wait(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 2)
    await create(nc, "R", ack_wait=500 * MS)
    first = await pull(nc, "R", 2)
    assert seqs(first) == [(1, 1), (2, 1)]
    await first[1].ack_sync()
    t0 = time.monotonic()
    again = await pull(nc, "R", 1, expires_ms=2000)
    assert seqs(again) == [(1, 2)]
    assert time.monotonic() - t0 >= 0.3
    assert again[0].metadata.sequence.consumer == 3
    r = await info(nc, "R")
    assert r["num_redelivered"] == 1 and r["delivered"]["consumer_seq"] == 3


async def test_nak_immediate_and_with_delay(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 2)
    await create(nc, "N")
    msgs = await pull(nc, "N", 2)
    await nc.request(msgs[0].reply, b"-NAK", timeout=2)
    again = await pull(nc, "N", 1)
    assert seqs(again) == [(1, 2)]
    await nc.publish(msgs[1].reply, b'-NAK {"delay": 600000000}')
    assert await pull(nc, "N", 1, expires_ms=200) == []
    later = await pull(nc, "N", 1, expires_ms=2000)
    assert seqs(later) == [(2, 2)]


async def test_progress_delays_redelivery(nc: NATS, js: JetStreamContext) -> None:
    """+WPI restarts the ack wait: a worker reporting progress four times per
    ack wait keeps its message for 2.5 ack waits; once it stops, it comes back."""
    await seed(js, 1)
    await create(nc, "P", ack_wait=600 * MS)
    msgs = await pull(nc, "P", 1)
    stop = asyncio.Event()

    async def report_progress() -> None:
        while not stop.is_set():
            await nc.request(msgs[0].reply, b"+WPI", timeout=2)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.15)

    worker = asyncio.create_task(report_progress())
    try:
        assert await pull(nc, "P", 1, expires_ms=1500) == []
    finally:
        stop.set()
        await worker
    again = await pull(nc, "P", 1, expires_ms=2000)
    assert seqs(again) == [(1, 2)]


async def test_term_stops_redelivery(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 2)
    await create(nc, "T", ack_wait=3000 * MS)
    msgs = await pull(nc, "T", 1)
    await nc.request(msgs[0].reply, b"+TERM no good", timeout=2)
    r = await info(nc, "T")
    assert r["ack_floor"]["stream_seq"] == 1 and r["num_ack_pending"] == 0
    nxt = await pull(nc, "T", 2, expires_ms=800)
    assert seqs(nxt) == [(2, 1)]


async def test_max_deliver_stops_redelivering(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 1)
    await create(nc, "M", ack_wait=300 * MS, max_deliver=2)
    assert seqs(await pull(nc, "M", 1)) == [(1, 1)]
    assert seqs(await pull(nc, "M", 1, expires_ms=1000)) == [(1, 2)]
    assert await pull(nc, "M", 1, expires_ms=900) == []
    r = await info(nc, "M")
    assert r["num_ack_pending"] == 0 and r["num_redelivered"] == 1
    assert r["ack_floor"]["stream_seq"] == 0


async def test_expired_messages_come_again_in_stream_order_even_at_max_ack_pending(
    nc: NATS, js: JetStreamContext
) -> None:
    """The connector's option consumer relies on it (spark_jetstream/read/consumer_feed.py): what a
    crashed reader held pending is delivered again once due, in stream order, also when the
    consumer is at max_ack_pending (new messages wait; redeliveries do not)."""
    await seed(js, 6)
    await create(nc, "O", ack_wait=500 * MS, max_ack_pending=4)
    first = await pull(nc, "O", 4)
    assert seqs(first) == [(1, 1), (2, 1), (3, 1), (4, 1)]
    await first[1].ack_sync()  # room for one new message: 5 at once, then 1, 3, 4 when due
    again = await pull(nc, "O", 4, expires_ms=3000)
    assert seqs(again) == [(5, 1), (1, 2), (3, 2), (4, 2)]
    r = await info(nc, "O")
    assert r["num_ack_pending"] == 4 and r["num_pending"] == 1  # 6 waits for room


async def test_backoff_spaces_redeliveries(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 1)
    await create(nc, "B", backoff=[300 * MS, 3000 * MS], max_deliver=4)
    await pull(nc, "B", 1)
    t0 = time.monotonic()
    assert seqs(await pull(nc, "B", 1, expires_ms=2500)) == [(1, 2)]
    t1 = time.monotonic()
    assert seqs(await pull(nc, "B", 1, expires_ms=5000)) == [(1, 3)]
    t2 = time.monotonic()
    # the first back-off (0.3 s) before the second (3 s); the gap between them wide
    # enough for a loaded machine (lower bounds hold under any load)
    assert t1 - t0 < 2.5
    assert t2 - t1 >= 2.5


async def test_next_acks_and_pulls(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3)
    await create(nc, "X")
    msgs = await pull(nc, "X", 1)
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(msgs[0].reply, b"+NXT 2", reply=inbox)
    got = [await sub.next_msg(timeout=2), await sub.next_msg(timeout=2)]
    assert [m.metadata.sequence.stream for m in got] == [2, 3]
    r = await info(nc, "X")
    assert r["ack_floor"]["stream_seq"] == 1


async def test_ack_all(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3)
    await create(nc, "AA", ack_policy="all")
    msgs = await pull(nc, "AA", 3)
    await msgs[1].ack_sync()
    r = await info(nc, "AA")
    assert r["ack_floor"]["stream_seq"] == 2 and r["num_ack_pending"] == 1


async def test_ack_none(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3)
    await create(nc, "AN", ack_policy="none")
    msgs = await pull(nc, "AN", 2)
    assert msgs[0].reply.startswith("$JS.ACK.S.AN.1.1.1.")
    r = await info(nc, "AN")
    assert r["ack_floor"]["stream_seq"] == 2 and r["num_ack_pending"] == 0


async def test_workqueue_removes_acked(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3, retention="workqueue")
    await create(nc, "W")
    msgs = await pull(nc, "W", 2)
    await msgs[0].ack_sync()
    await nc.request(msgs[1].reply, b"+TERM", timeout=2)  # as a request: processed when answered
    state = (await js.stream_info("S")).state
    assert state.messages == 1 and state.first_seq == 3


async def test_interest_keeps_until_every_consumer_acked(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="S", subjects=["s.>"], retention="interest")
    await js.publish("s.0", b"dropped: nobody interested")
    await create(nc, "I1")
    await create(nc, "I2", filter_subject="s.1")
    await js.publish("s.0", b"a")
    await js.publish("s.1", b"b")
    assert (await js.stream_info("S")).state.messages == 2
    one = await pull(nc, "I1", 2)
    for m in one:
        await m.ack_sync()
    state = (await js.stream_info("S")).state
    assert state.messages == 1 and state.first_seq == 3
    two = await pull(nc, "I2", 1)
    await two[0].ack_sync()
    assert (await js.stream_info("S")).state.messages == 0


async def test_acks_for_unknown_streams_and_consumers(nc: NATS, js: JetStreamContext) -> None:
    import nats.errors

    await seed(js, 1)
    for subject in ("$JS.ACK.NOPE.C.1.1.1.1.0", "$JS.ACK.S.NOPE.1.1.1.1.0"):
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request(subject, b"+ACK", timeout=2)
    # a malformed ack subject is ignored and the server keeps serving
    await nc.publish("$JS.ACK.S.C.x.y", b"+ACK")
    assert (await js.stream_info("S")).state.messages == 1


async def test_ack_subject_with_a_domain(server_kind: str, tmp_path: Any) -> None:
    """With a JetStream domain the server still uses the 9-token ack subject."""
    import nats as nats_client

    from jetstream_testing.process import ServerProcess, bundled_server_command, nats_server_binary

    conf = tmp_path / "js.conf"
    conf.write_text(f'jetstream {{ domain: hub, store_dir: "{tmp_path / "store"}" }}\n')
    command = [nats_server_binary()] if server_kind == "nats-server" else bundled_server_command()
    with ServerProcess(command, ["-c", str(conf)]) as srv:
        nc = await nats_client.connect(srv.url, max_reconnect_attempts=0)
        try:
            js = nc.jetstream(domain="hub")
            await js.add_stream(name="S", subjects=["s.>"])
            await js.publish("s.a", b"x")
            sub = await js.pull_subscribe("s.>", "C")
            (msg,) = await sub.fetch(1)
            assert len(msg.reply.split(".")) == 9 and msg.reply.startswith("$JS.ACK.S.C.1.1.1.")
            await msg.ack_sync()
            assert (await js.consumer_info("S", "C")).ack_floor.stream_seq == 1
        finally:
            await nc.close()
