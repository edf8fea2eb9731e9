"""Counters fed by sources (ADR-49) on both servers: a counter stream sourcing two
counter streams adds their totals up, keeps the last total seen per origin
stream and subject in `Nats-Counter-Sources` and stores the difference as the
message's `Nats-Incr`."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import nats
from js_helpers import api, info
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess


async def _until(nc: NATS, name: str, messages: int) -> None:
    deadline = time.monotonic() + 10
    while (await info(nc, name))["state"]["messages"] < messages:
        assert time.monotonic() < deadline, f"{name} never had {messages} messages"
        await asyncio.sleep(0.05)


async def _stored(nc: NATS, name: str, seq: int) -> tuple[str, bytes, dict[str, str]]:
    msg: dict[str, Any] = (await api(nc, f"STREAM.MSG.GET.{name}", {"seq": seq}))["message"]
    lines = base64.b64decode(msg.get("hdrs", "")).decode().split("\r\n")[1:]
    headers = dict(line.split(": ", 1) for line in lines if line)
    source = headers.pop("Nats-Stream-Source", "")
    if source:  # the last field is the origin's identity: a hash of its creation time
        headers["Nats-Stream-Source"] = " ".join(source.split(" ")[:5])
    return msg["subject"], base64.b64decode(msg.get("data", "")), headers


async def test_a_counter_fed_by_sources(server: ServerProcess) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        for name in ("A", "B"):
            await api(nc, f"STREAM.CREATE.{name}", {
                "name": name, "subjects": [f"{name.lower()}.>"], "allow_msg_counter": True})
        created = await api(nc, "STREAM.CREATE.C", {
            "name": "C", "subjects": ["c.>"], "allow_msg_counter": True, "sources": [
                {"name": "A", "subject_transforms": [{"src": "a.>", "dest": "c.>"}]},
                {"name": "B", "subject_transforms": [{"src": "b.>", "dest": "c.>"}]}]})
        assert "error" not in created, created
        await nc.request("b.x", b"", headers={"Nats-Incr": "10"}, timeout=5)
        await _until(nc, "C", 1)
        for subject, incr in (("a.x", "5"), ("a.x", "3"), ("a.y", "-2")):
            await nc.request(subject, b"", headers={"Nats-Incr": incr}, timeout=5)
        await _until(nc, "C", 4)
        own = await nc.request("c.x", b"", headers={"Nats-Incr": "100"}, timeout=5)
        assert b'"val":"118"' in own.data
        got = [await _stored(nc, "C", seq) for seq in range(1, 6)]
    finally:
        await nc.close()
    both = '{"A":{"a.x":"%s"},"B":{"b.x":"10"}}'
    assert got == [
        ("c.x", b'{"val":"10"}', {"Nats-Incr": "10", "Nats-Stream-Source": "B 1 b.> c.> b.x",
                                  "Nats-Counter-Sources": '{"B":{"b.x":"10"}}'}),
        ("c.x", b'{"val":"15"}', {"Nats-Incr": "5", "Nats-Stream-Source": "A 1 a.> c.> a.x",
                                  "Nats-Counter-Sources": both % "5"}),
        ("c.x", b'{"val":"18"}', {"Nats-Incr": "3", "Nats-Stream-Source": "A 2 a.> c.> a.x",
                                  "Nats-Counter-Sources": both % "8"}),
        ("c.y", b'{"val":"-2"}', {"Nats-Incr": "-2", "Nats-Stream-Source": "A 3 a.> c.> a.y",
                                  "Nats-Counter-Sources": '{"A":{"a.y":"-2"}}'}),
        ("c.x", b'{"val":"118"}', {"Nats-Incr": "100", "Nats-Counter-Sources": both % "8"}),
    ]
