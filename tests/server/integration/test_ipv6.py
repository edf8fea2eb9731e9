"""Both servers listen on an IPv6 address (``-a ::1``) and serve NATS and JetStream on it."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import nats
import pytest
from server_kinds import SERVER_KINDS

from jetstream_testing.process import start_server


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_ipv6_loopback(kind: str, tmp_path: Path) -> None:
    srv = start_server(kind, tmp_path / "js", host="::1", http_port=-1)
    try:
        assert srv.url.startswith("nats://[::1]:")
        asyncio.run(_round_trip(srv.url))
        with urllib.request.urlopen(f"http://[::1]:{srv.monitor_port}/varz", timeout=10) as rsp:
            assert json.load(rsp)["port"] == srv.port
    finally:
        srv.stop()


async def _round_trip(url: str) -> None:
    nc = await nats.connect(url)
    try:
        sub = await nc.subscribe("v6")
        await nc.publish("v6", b"hello")
        msg = await sub.next_msg(timeout=5)
        assert msg.data == b"hello"
        js = nc.jetstream()
        await js.add_stream(name="V6", subjects=["v6.>"])
        assert (await js.publish("v6.a", b"x")).seq == 1
    finally:
        await nc.close()
