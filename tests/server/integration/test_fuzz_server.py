"""Fuzzed `$JS.API` requests and protocol bytes over real sockets, on both servers
(issue 12): every request gets an answer or nothing, never a dropped connection for an
API mistake; protocol garbage closes only its own connection; another client is
served throughout; the bundled server's memory stays bounded. Seeds are printed."""

from __future__ import annotations

import json
import os
import random
import socket
import urllib.request
from pathlib import Path

import nats
import pytest

from jetstream_testing.fuzz import random_request
from jetstream_testing.process import start_server

pytestmark = pytest.mark.asyncio

REQUESTS = 300
GARBAGE_CONNECTIONS = 60


def mem(port: int | None) -> int:
    if port is None:
        return 0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/varz", timeout=10) as r:
        return int(json.loads(r.read())["mem"])


@pytest.mark.parametrize("kind", ["bundled", "nats-server"])
async def test_fuzzed_traffic_leaves_the_server_serving(kind: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("FUZZ_SEED", random.randrange(1 << 30)))
    print(f"seed {seed}")
    rng = random.Random(seed)
    proc = start_server(kind, tmp_path / "store", http_port=-1 if kind == "bundled" else None)
    try:
        fuzzed = await nats.connect(proc.url, max_reconnect_attempts=0, allow_reconnect=False)
        other = await nats.connect(proc.url, max_reconnect_attempts=0, allow_reconnect=False)
        await other.jetstream().add_stream(name="S", subjects=["s.>"], allow_direct=True)
        await other.publish("s.a", b"x")
        before = mem(proc.monitor_port)
        answered = 0
        for i in range(REQUESTS):
            subject, body = random_request(rng)
            if len(body) > 900_000:
                continue
            try:
                await fuzzed.request(subject, body, timeout=0.2)
                answered += 1
            except nats.errors.BadSubjectError:
                continue  # nats-py will not send it
            except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
                pass  # some requests get no answer (nats-server too)
            if i % 100 == 99:
                info = await other.request("$JS.API.INFO", b"", timeout=5)
                assert b"account_info_response" in info.data
        assert fuzzed.is_connected  # API mistakes never cost the connection
        for _ in range(GARBAGE_CONNECTIONS):
            with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as sock:
                sock.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300))))
        info = await other.request("$JS.API.INFO", b"", timeout=5)
        assert b"account_info_response" in info.data
        after = mem(proc.monitor_port)
        print(f"{kind}: {answered}/{REQUESTS} answered; memory {before / 1e6:.1f} -> {after / 1e6:.1f} MB")
        assert after - before < 64e6
        await fuzzed.close()
        await other.close()
    finally:
        proc.stop()
