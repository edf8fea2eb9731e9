"""Atomic batch publish (ADR-50) on both servers, with nats-py publishing the headers.

A batch is stored whole at its commit (nothing before), or not at all; each
refusal is nats-server's pub ack error.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import AsyncIterator

import nats
import pytest
from js_helpers import api as _api
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess


@pytest.fixture
async def nc(server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await _api(client, "STREAM.CREATE.A", {"name": "A", "subjects": ["a.>"],
                                               "allow_atomic": True})
        yield client
    finally:
        await client.close()



async def _pub(nc: NATS, subject: str, batch: str, seq: int | str | None,
               commit: str | None = None, **extra: str) -> bytes:
    headers = {"Nats-Batch-Id": batch, **extra}
    if seq is not None:
        headers["Nats-Batch-Sequence"] = str(seq)
    if commit is not None:
        headers["Nats-Batch-Commit"] = commit
    msg = await nc.request(subject, b"x", headers=headers, timeout=5)
    return bytes(msg.data)


async def _messages(nc: NATS) -> int:
    return int((await _api(nc, "STREAM.INFO.A"))["state"]["messages"])


def _error(answer: bytes) -> int:
    return int(json.loads(answer)["error"]["err_code"])


async def test_batch_is_stored_at_commit(nc: NATS) -> None:
    info = await _api(nc, "STREAM.INFO.A")
    assert info["config"]["allow_atomic"] is True
    assert info["config"]["metadata"]["_nats.req.level"] == "2"
    assert await _pub(nc, "a.1", "b1", 1) == b""  # staged: an empty ack
    assert await _pub(nc, "a.2", "b1", 2) == b""
    assert await _messages(nc) == 0
    ack = json.loads(await _pub(nc, "a.3", "b1", 3, "1"))
    assert ack == {"stream": "A", "seq": 3, "batch": "b1", "count": 3}
    assert await _messages(nc) == 3
    third = (await _api(nc, "STREAM.MSG.GET.A", {"seq": 3}))["message"]
    headers = base64.b64decode(third["hdrs"])
    assert b"Nats-Batch-Id: b1\r\n" in headers and b"Nats-Batch-Commit: 1\r\n" in headers
    # "eob": the marker is not stored, the last staged message becomes the commit
    assert await _pub(nc, "a.4", "b2", 1) == b""
    ack = json.loads(await _pub(nc, "a.ignored", "b2", 2, "eob"))
    assert ack == {"stream": "A", "seq": 4, "batch": "b2", "count": 1}
    fourth = (await _api(nc, "STREAM.MSG.GET.A", {"seq": 4}))["message"]
    assert fourth["subject"] == "a.4"
    assert b"Nats-Batch-Commit: 1\r\n" in base64.b64decode(fourth["hdrs"])


async def test_refusals(nc: NATS) -> None:
    await _api(nc, "STREAM.CREATE.N", {"name": "N", "subjects": ["n.>"]})
    assert _error(await _pub(nc, "n.1", "b", 1)) == 10174  # not allowed on the stream
    assert _error(await _pub(nc, "a.1", "b", None)) == 10175  # no sequence
    assert _error(await _pub(nc, "a.1", "b", "x")) == 10175
    assert _error(await _pub(nc, "a.1", "x" * 65, 1)) == 10179  # id longer than 64
    assert _error(await _pub(nc, "a.1", "b", 2)) == 10176  # does not start at 1
    too_large = json.loads(await _pub(nc, "a.1", "b", 1001))
    assert too_large["error"] == {"code": 400, "err_code": 10199,
                                  "description": "atomic publish batch is too large: 1000"}
    assert _error(await _pub(nc, "a.1", "b", 1, "yes")) == 10200  # commit must be 1 or eob
    assert _error(await _pub(nc, "a.1", "b", 1, "eob")) == 10176  # nothing to commit
    assert await _pub(nc, "a.1", "gap", 1) == b""
    assert _error(await _pub(nc, "a.3", "gap", 3, "1")) == 10176  # a gap ends the batch
    assert _error(await _pub(nc, "a.2", "gap", 2, "1")) == 10176  # ... for good
    assert await _messages(nc) == 0


@pytest.mark.parametrize(
    ("second", "err_code"),
    [
        ({"Nats-Msg-Id": "m1"}, 10201),  # the same id twice in one batch
        ({"Nats-Expected-Last-Msg-Id": "m1"}, 10177),  # not supported in batches
        ({"Nats-Expected-Last-Sequence": "1"}, 10164),  # only the first message may expect
    ],
)
async def test_a_failed_commit_stores_nothing(nc: NATS, second: dict[str, str],
                                              err_code: int) -> None:
    assert await _pub(nc, "a.1", "b", 1, **{"Nats-Msg-Id": "m1"}) == b""
    assert _error(await _pub(nc, "a.2", "b", 2, "1", **second)) == err_code
    assert await _messages(nc) == 0
    # an id stored before also refuses the batch that repeats it
    await nc.request("a.0", b"x", headers={"Nats-Msg-Id": "m0"}, timeout=5)
    assert await _pub(nc, "a.1", "c", 1) == b""
    assert _error(await _pub(nc, "a.2", "c", 2, "1", **{"Nats-Msg-Id": "m0"})) == 10201
    assert await _messages(nc) == 1


async def test_consumers_see_the_batch_after_the_commit(nc: NATS) -> None:
    js = nc.jetstream()
    sub = await js.pull_subscribe("a.>", durable="C", stream="A")
    assert await _pub(nc, "a.1", "b", 1) == b""
    with pytest.raises(nats.errors.TimeoutError):
        await sub.fetch(1, timeout=0.3)
    await _pub(nc, "a.2", "b", 2, "1")
    msgs = await sub.fetch(2, timeout=5)
    assert [m.subject for m in msgs] == ["a.1", "a.2"]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_interleaved_batches_are_stored_whole_and_contiguous(nc: NATS, seed: int) -> None:
    """Several publishers send their batches at once, in small bursts; one of them
    skips a sequence. Each committed batch is stored in one piece and in order;
    the broken one not at all."""
    rng = random.Random(seed)
    print("seed", seed)
    sizes = {f"b{n}": rng.randint(2, 12) for n in range(6)}
    broken = rng.choice(sorted(sizes))

    async def publisher(batch: str, size: int) -> bytes:
        answer = b""
        for seq in range(1, size + 1):
            if batch == broken and seq == 2:
                continue  # the gap
            answer = await _pub(nc, f"a.{batch}", batch, seq, "1" if seq == size else None)
            if rng.random() < 0.3:
                await asyncio.sleep(0)  # let the others in between
        return answer

    answers = await asyncio.gather(*(publisher(b, n) for b, n in sizes.items()))
    stored_batches = {b: n for b, n in sizes.items() if b != broken}
    for (batch, size), answer in zip(sizes.items(), answers, strict=True):
        if batch == broken:
            assert _error(answer) == 10176
        else:
            assert json.loads(answer)["count"] == size
    total = sum(stored_batches.values())
    assert await _messages(nc) == total
    stored: list[tuple[str, bytes]] = []
    for seq in range(1, total + 1):
        msg = (await _api(nc, "STREAM.MSG.GET.A", {"seq": seq}))["message"]
        stored.append((msg["subject"], base64.b64decode(msg["hdrs"])))
    runs: list[tuple[str, list[bytes]]] = []
    for subject, headers in stored:
        if not runs or runs[-1][0] != subject:
            runs.append((subject, []))
        runs[-1][1].append(headers)
    # one run per batch, its messages in batch order
    assert sorted(subject for subject, _ in runs) == sorted(f"a.{b}" for b in stored_batches)
    for _subject, headers in runs:
        for n, block in enumerate(headers, start=1):
            assert b"Nats-Batch-Sequence: %d\r\n" % n in block
