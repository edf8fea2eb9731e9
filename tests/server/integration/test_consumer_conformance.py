"""Differential conformance: the same seeded random sequence of pulls, acks, naks, terms
and resets against the bundled server and the real nats-server; every delivery (stream
seq, delivery count, consumer seq, num_pending) and the consumer info after every step
must be the same. Needs both servers (JS_TEST_SERVERS must name both)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from server_kinds import SERVER_KINDS

from jetstream_testing.process import start_server

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(
        not {"bundled", "nats-server"} <= set(SERVER_KINDS),
        reason="differential test needs both servers",
    ),
]


async def _pull(nc: NATS, batch: int) -> list[tuple[str, ...]]:
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    body = json.dumps({"batch": batch, "no_wait": True}).encode()
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.C", body, reply=inbox)
    got: list[tuple[str, ...]] = []
    try:
        while len(got) < batch:
            msg = await sub.next_msg(timeout=2)
            if msg.headers and msg.headers.get("Status"):
                got.append(("status", msg.headers["Status"]))
                break
            tokens = msg.reply.split(".")
            got.append((msg.reply, *tokens[4:7], tokens[8]))
    finally:
        await sub.unsubscribe()
    return got


def _info(raw: dict[str, Any], *, after_reset: bool) -> tuple[Any, ...]:
    delivered = None if after_reset else (raw["delivered"]["consumer_seq"], raw["delivered"]["stream_seq"])
    return (
        delivered,
        raw["ack_floor"]["consumer_seq"],
        raw["ack_floor"]["stream_seq"],
        raw["num_ack_pending"],
        raw["num_redelivered"],
        raw["num_pending"],
    )


async def _scenario(kind: str, store: Path, seed: int, config: dict[str, Any]) -> list[Any]:
    rnd = random.Random(seed)
    server = start_server(kind, store)
    trace: list[Any] = []
    try:
        nc = await nats.connect(server.url, max_reconnect_attempts=0)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        for i in range(30):
            await js.publish(f"s.{i % 3}", b"x")
        body = {"stream_name": "S", "config": {"durable_name": "C", **config}}
        await nc.request("$JS.API.CONSUMER.CREATE.S.C", json.dumps(body).encode(), timeout=2)
        held: list[str] = []
        for _ in range(45):
            op = rnd.choice(["fetch", "fetch", "ack", "ack", "nak", "term", "reset"])
            if op == "fetch":
                got = await _pull(nc, rnd.randint(1, 5))
                held.extend(g[0] for g in got if g[0] != "status")
                trace.append(("fetch", [g[1:] for g in got]))
            elif op == "reset":
                seq = rnd.choice([0, rnd.randint(1, 35)])
                payload = json.dumps({"seq": seq}).encode() if seq else b""
                reply = await nc.request("$JS.API.CONSUMER.RESET.S.C", payload, timeout=2)
                held.clear()
                trace.append(("reset", seq, json.loads(reply.data).get("reset_seq")))
            elif held:
                reply_subject = held.pop(rnd.randrange(len(held)))
                ack = {"ack": b"+ACK", "nak": b"-NAK", "term": b"+TERM"}[op]
                await nc.request(reply_subject, ack, timeout=2)
                trace.append((op, reply_subject.split(".")[5]))
            else:
                continue
            info = await nc.request("$JS.API.CONSUMER.INFO.S.C", b"", timeout=2)
            trace.append(_info(json.loads(info.data), after_reset=op == "reset"))
        await nc.close()
    finally:
        server.stop()
    return trace


@pytest.mark.parametrize(
    "config",
    [
        {"ack_policy": "explicit", "max_ack_pending": 100},
        {"ack_policy": "explicit", "max_ack_pending": 100, "filter_subject": "s.1"},
        {"ack_policy": "all", "max_ack_pending": 100},
    ],
    ids=["explicit", "filtered", "ack-all"],
)
@pytest.mark.parametrize("seed", [1, 2])
async def test_same_deliveries_and_state_as_nats_server(tmp_path: Path, seed: int, config: dict[str, Any]) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "bundled").mkdir()
    real = await _scenario("nats-server", tmp_path / "real", seed, config)
    ours = await _scenario("bundled", tmp_path / "bundled", seed, config)
    for step, (want, have) in enumerate(zip(real, ours, strict=True)):
        assert have == want, f"step {step}: after {real[max(0, step - 3):step]}"
