"""Differential: the bytes a message counts for, on the bundled server and on nats-server.

nats-server's file store counts a message as its record (filestore.go
fileStoreMsgSize: `22 + S + D + 8`, with headers `22 + S + 4 + H + D + 8`), its
memory store as `S + H + D + 16` (memstore.go memStoreMsgSize). The same
publishes (with and without headers, an ASCII and a UTF-8 subject), deletes,
purges, `max_bytes` limits (discard old, discard new, with a per-subject limit)
and a restart run against both servers; stream `state.bytes`, which message a
limit discards or refuses, and the account usage in `$JS.API.INFO` must be the
same after every step. Needs both servers (JS_TEST_SERVERS must name both)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, start_server

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(
        not {"bundled", "nats-server"} <= set(SERVER_KINDS),
        reason="differential test needs both servers",
    ),
]

SEEDS = (7, 11)
STORAGES = ("file", "memory")
SUBJECTS = ("b.one", "b.déjà", "b.x.y")


# nats-server tears a deleted stream down asynchronously; on a loaded machine a create right
# after a delete can meet the teardown and be refused with 10049 "error creating store for
# stream" (its log names the cause). Such a create is retried, a bounded number of times.
STORE_CREATE_FAILED = 10049
CREATE_ATTEMPTS = 20
CREATE_RETRY_S = 0.25


async def _api(nc: NATS, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = json.dumps(body).encode() if body is not None else b""
    for _ in range(CREATE_ATTEMPTS if subject.startswith("STREAM.CREATE.") else 1):
        reply = await nc.request(f"$JS.API.{subject}", payload, timeout=5)
        answer: dict[str, Any] = json.loads(reply.data)
        if answer.get("error", {}).get("err_code") != STORE_CREATE_FAILED:
            break
        await asyncio.sleep(CREATE_RETRY_S)
    assert "error" not in answer, (subject, answer)
    return answer


async def _state(nc: NATS, stream: str) -> tuple[int, int, int, int]:
    st = (await _api(nc, f"STREAM.INFO.{stream}"))["state"]
    return st["messages"], st["bytes"], st["first_seq"], st["last_seq"]


async def _usage(nc: NATS) -> tuple[int, int]:
    info = await _api(nc, "INFO")
    return info["memory"], info["storage"]


async def _publish(nc: NATS, rnd: random.Random, stream: str) -> Any:
    """One message, headers or not, of a random size; the ack's seq or error code."""
    subject = rnd.choice(SUBJECTS)
    data = bytes(rnd.randrange(256) for _ in range(rnd.choice((0, 1, 9, 40, 130))))
    headers = {"K": "v" * rnd.randint(1, 30)} if rnd.random() < 0.5 else None
    reply = await nc.request(subject, data, timeout=5, headers=headers)
    ack = json.loads(reply.data)
    assert ack.get("stream", stream) == stream
    return ack["error"]["err_code"] if "error" in ack else ack["seq"]


async def _scenario(server: ServerProcess, seed: int) -> list[Any]:
    rnd = random.Random(seed)
    trace: list[Any] = []
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        for storage in STORAGES:
            name = f"B{storage}"
            await _api(nc, f"STREAM.CREATE.{name}", {
                "name": name, "subjects": ["b.>"], "storage": storage})
            for _ in range(12):
                trace.append((storage, "pub", await _publish(nc, rnd, name), await _state(nc, name)))
            await _api(nc, f"STREAM.MSG.DELETE.{name}", {"seq": 3})
            trace.append((storage, "delete", await _state(nc, name), await _usage(nc)))
            await _api(nc, f"STREAM.PURGE.{name}", {"filter": "b.one"})
            trace.append((storage, "purge subject", await _state(nc, name)))
            await _api(nc, f"STREAM.PURGE.{name}", {"keep": 2})
            trace.append((storage, "purge keep", await _state(nc, name), await _usage(nc)))
            await _api(nc, f"STREAM.DELETE.{name}")
            for discard, per_subject in (("old", -1), ("new", -1), ("old", 2)):
                limited = f"L{storage}{discard}{per_subject}"
                await _api(nc, f"STREAM.CREATE.{limited}", {
                    "name": limited, "subjects": ["b.>"], "storage": storage, "max_bytes": 700,
                    "discard": discard, "max_msgs_per_subject": per_subject})
                for _ in range(25):
                    step = await _publish(nc, rnd, limited)
                    trace.append((limited, step, await _state(nc, limited)))
                await _api(nc, f"STREAM.DELETE.{limited}")
        await _api(nc, "STREAM.CREATE.KEEP", {"name": "KEEP", "subjects": ["b.>"]})
        for _ in range(10):
            trace.append(("keep", await _publish(nc, rnd, "KEEP")))
        await _api(nc, "STREAM.MSG.DELETE.KEEP", {"seq": 2})
        trace.append(("keep", await _state(nc, "KEEP"), await _usage(nc)))
    finally:
        await nc.close()
    server.restart()
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        trace.append(("restarted", await _state(nc, "KEEP"), await _usage(nc)))
        await _api(nc, "STREAM.PURGE.KEEP")
        trace.append(("purged", await _state(nc, "KEEP"), await _usage(nc)))
    finally:
        await nc.close()
    return trace


@pytest.mark.parametrize("seed", SEEDS)
async def test_stored_bytes_match_nats_server(tmp_path: Path, seed: int) -> None:
    print(f"seed {seed}")
    traces = {}
    for kind in ("nats-server", "bundled"):
        server = start_server(kind, tmp_path / kind)
        try:
            try:
                traces[kind] = await _scenario(server, seed)
            except Exception as exc:
                raise AssertionError(f"{kind}: {exc!r}\n" + "\n".join(server.log[-20:])) from exc
        finally:
            server.stop()
    real, ours = traces["nats-server"], traces["bundled"]
    for step, (want, have) in enumerate(zip(real, ours, strict=True)):
        assert have == want, f"step {step}: after {real[max(0, step - 3):step]}"
    # the scenario reached what it tests: a refusal under discard new, messages
    # discarded under discard old, headers in the kept stream across the restart
    assert any(step[1] == 10077 for step in real if str(step[0]).startswith("Lfilenew"))
    assert any(step[2][2] > 1 for step in real if str(step[0]).startswith("Lmemoryold"))
    assert real[-2][1][1] > 0 and real[-1][1][1] == 0
