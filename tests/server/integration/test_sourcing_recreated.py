"""Mirrors and sources whose origin is deleted and created again, on both servers.

nats-server resets a source whose origin was recreated (the origin's identity,
a hash of its creation time, changed): the new origin is read from its start.
A mirror keeps its sequences and takes the new origin's messages once their
sequences pass its own. Waits are bounded (nats-server notices through its
sourcing consumer's health checks, within seconds).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats
from js_helpers import api, info

from jetstream_testing.process import ServerProcess


async def _until(nc: Any, name: str, messages: int, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = await info(nc, name)
        if found["state"]["messages"] >= messages or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


async def test_a_recreated_origin(server: ServerProcess) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await api(nc, "STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
        await api(nc, "STREAM.CREATE.M", {"name": "M", "mirror": {"name": "O"}})
        await api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"],
                                          "sources": [{"name": "O"}]})
        for i in range(3):
            await nc.request("o.old", str(i).encode(), timeout=5)
        assert (await _until(nc, "S", 3))["state"]["messages"] == 3
        assert (await _until(nc, "M", 3))["state"]["messages"] == 3
        await api(nc, "STREAM.DELETE.O")
        await api(nc, "STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
        for i in range(2):
            await nc.request("o.new", str(i).encode(), timeout=5)
        source = await _until(nc, "S", 5)
        assert source["state"]["messages"] == 5  # the new origin's 1 and 2 were copied
        assert source["sources"][0]["seq"] == 2
        last = await api(nc, "STREAM.MSG.GET.S", {"last_by_subj": "o.new"})
        assert last["message"]["hdrs"]  # with its Nats-Stream-Source header
        for i in range(3):
            await nc.request("o.new", str(i).encode(), timeout=5)
        mirror = await _until(nc, "M", 5)
        # the mirror took the new origin's 4 and 5, after its own 3
        assert (mirror["state"]["messages"], mirror["state"]["last_seq"]) == (5, 5)
        got = await api(nc, "STREAM.MSG.GET.M", {"seq": 4})
        assert got["message"]["subject"] == "o.new"
        assert (await _until(nc, "S", 8))["state"]["messages"] == 8
    finally:
        await nc.close()


async def test_a_filtered_mirror_skips_a_long_gap(server: ServerProcess) -> None:
    """The origin's 5000 filtered-out messages are one skip in the mirror (one store
    operation, tests/server/unit/test_store_skip.py), deleted sequences as on
    nats-server; after a restart the mirror goes on after them."""
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await api(nc, "STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
        await nc.request("o.keep", b"first", timeout=5)
        for i in range(5000):
            await nc.publish("o.other", b"%d" % i)
        await nc.request("o.keep", b"second", timeout=5)
        await api(nc, "STREAM.CREATE.M", {"name": "M", "mirror": {
            "name": "O", "filter_subject": "o.keep"}})
        mirror = await _until(nc, "M", 2)
        assert {k: mirror["state"][k] for k in ("messages", "first_seq", "last_seq",
                                                 "num_deleted")} == {
            "messages": 2, "first_seq": 1, "last_seq": 5002, "num_deleted": 5000}
    finally:
        await nc.close()
    server.restart()
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await nc.request("o.keep", b"third", timeout=5)
        mirror = await _until(nc, "M", 3)
        assert (mirror["state"]["messages"], mirror["state"]["last_seq"]) == (3, 5003)
    finally:
        await nc.close()
