"""Fast batch publish (`allow_batched`, ADR-50, API level 4) on both servers.

nats-py has no fast batch publisher, so the tests publish with the reply
subject pattern ``<inbox>.<id>.<flow>.<gap>.<seq>.<op>.$FI`` and read what the
server sends to the inbox (flow acks, gaps, errors, the commit's pub ack)
message by message: every answer is compared in full, in order.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from js_helpers import api
from nats.aio.client import Client as NATS
from nats.aio.subscription import Subscription
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, start_server, write_config

START, APPEND, COMMIT, EOB, PING = range(5)


@pytest.fixture(scope="module", params=SERVER_KINDS)
def server_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def shared_server(server_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(server_kind, tmp_path_factory.mktemp("store"))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
async def nc(shared_server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(shared_server.url, max_reconnect_attempts=0)
    try:
        yield client
    finally:
        await client.close()


_names = iter(range(1_000_000))


async def _stream(nc: NATS, **config: Any) -> str:
    """A fresh stream (unique name and subject) with fast batches allowed."""
    name = f"FB{next(_names)}"
    body = {"name": name, "subjects": [f"{name.lower()}.>"], "allow_batched": True, **config}
    resp = await api(nc, f"STREAM.CREATE.{name}", body)
    assert "error" not in resp, resp
    return name


class Batch:
    """One fast batch publisher: the reply pattern and its inbox."""

    def __init__(self, nc: NATS, sub: Subscription, inbox: str, batch_id: str, flow: int,
                 gap: str) -> None:
        self.nc, self.sub, self.inbox = nc, sub, inbox
        self.batch_id, self.flow, self.gap = batch_id, flow, gap

    @classmethod
    async def open(cls, nc: NATS, batch_id: str = "uuid", flow: int = 0,
                   gap: str = "fail") -> Batch:
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox + ".>")
        return cls(nc, sub, inbox, batch_id, flow, gap)

    def reply(self, seq: int, op: int) -> str:
        return f"{self.inbox}.{self.batch_id}.{self.flow}.{self.gap}.{seq}.{op}.$FI"

    async def send(self, subject: str, seq: int, op: int, data: bytes = b"x",
                   headers: dict[str, str] | None = None) -> None:
        await self.nc.publish(subject, data, reply=self.reply(seq, op), headers=headers)

    async def next(self) -> dict[str, Any]:
        msg = await self.sub.next_msg(timeout=5)
        return dict(json.loads(msg.data))


def _err(answer: dict[str, Any]) -> int:
    return int(answer["error"]["err_code"])


async def _subjects(nc: NATS, stream: str) -> list[str]:
    info = await api(nc, f"STREAM.INFO.{stream}")
    out = []
    for seq in range(info["state"]["first_seq"], info["state"]["last_seq"] + 1):
        got = await api(nc, f"STREAM.MSG.GET.{stream}", {"seq": seq})
        out.append(got["message"]["subject"])
    return out


async def test_config_needs_level_4(nc: NATS) -> None:
    name = await _stream(nc)
    info = await api(nc, f"STREAM.INFO.{name}")
    assert info["config"]["allow_batched"] is True
    assert info["config"]["metadata"]["_nats.req.level"] == "4"
    mirror = await api(nc, "STREAM.CREATE.FBM", {"name": "FBM", "mirror": {"name": name},
                                                  "allow_batched": True})
    assert _err(mirror) == 10209
    off = await api(nc, f"STREAM.UPDATE.{name}", {**info["config"], "allow_batched": False})
    assert "allow_batched" not in off["config"]
    assert off["config"]["metadata"]["_nats.req.level"] == "0"


async def test_refusals_and_a_batch(nc: NATS) -> None:
    """nats-server's TestJetStreamFastBatchPublish, answer by answer."""
    name = await _stream(nc, allow_batched=False)
    subject = f"{name.lower()}.0"
    b = await Batch.open(nc)
    await b.send(subject, 0, START)  # batch publish disabled
    assert _err(await b.next()) == 10205
    info = await api(nc, f"STREAM.INFO.{name}")
    await api(nc, f"STREAM.UPDATE.{name}", {**info["config"], "allow_batched": True})
    await b.send(subject, 0, START)  # sequence 0: not a valid pattern
    assert _err(await b.next()) == 10206
    await b.send(subject, 1, EOB)  # an end-of-batch commit at 1
    assert _err(await b.next()) == 10206
    long_id = await Batch.open(nc, batch_id="A" * 65)
    await long_id.send(subject, 1, START)
    assert _err(await long_id.next()) == 10207
    await b.send(subject, 2, APPEND)  # an unknown batch not starting at 1
    assert _err(await b.next()) == 10208
    await b.send(subject, 1, COMMIT)  # a batch of one: the pub ack at once
    assert await b.next() == {"stream": name, "seq": 1, "batch": "uuid", "count": 1}
    for seq in range(1, 6):
        op = START if seq == 1 else COMMIT if seq == 5 else APPEND
        await b.send(f"{name.lower()}.{seq}", seq, op)
    assert await b.next() == {"type": "ack", "seq": 0, "msgs": 10}
    assert await b.next() == {"stream": name, "seq": 6, "batch": "uuid", "count": 5}
    assert await _subjects(nc, name) == [f"{name.lower()}.{i}" for i in range(6)]


@pytest.mark.parametrize("gap", ["fail", "ok"])
async def test_gap(nc: NATS, gap: str) -> None:
    name = await _stream(nc)
    b = await Batch.open(nc, gap=gap)
    await b.send(f"{name.lower()}.a", 1, START)
    assert await b.next() == {"type": "ack", "seq": 0, "msgs": 10}
    await b.send(f"{name.lower()}.a", 3, APPEND)  # 2 was lost
    assert await b.next() == {"type": "gap", "last_seq": 2, "seq": 3}
    if gap == "fail":  # the batch ends with what was stored
        assert await b.next() == {"stream": name, "seq": 1, "batch": "uuid", "count": 1}
        return
    await b.send(f"{name.lower()}.a", 4, EOB)
    assert await b.next() == {"stream": name, "seq": 2, "batch": "uuid", "count": 3}


async def test_unknown_gap_mode_is_an_invalid_pattern(nc: NATS) -> None:
    name = await _stream(nc)
    b = await Batch.open(nc, gap="maybe")
    await b.send(f"{name.lower()}.a", 1, START)
    assert _err(await b.next()) == 10206


async def test_flow_acks_every_n_messages(nc: NATS) -> None:
    """nats-server's TestJetStreamFastBatchPublishFlowControl (flow 2)."""
    name = await _stream(nc)
    b = await Batch.open(nc, flow=2)
    for seq in range(1, 6):
        op = START if seq == 1 else COMMIT if seq == 5 else APPEND
        await b.send(f"{name.lower()}.a", seq, op)
        if seq == 1:
            assert await b.next() == {"type": "ack", "seq": 0, "msgs": 2}
        elif seq % 2 == 0:
            assert await b.next() == {"type": "ack", "seq": seq, "msgs": 2}
    assert await b.next() == {"stream": name, "seq": 5, "batch": "uuid", "count": 5}


async def test_ping(nc: NATS) -> None:
    """nats-server's TestJetStreamFastBatchPublishPing: a ping resends the flow
    ack; a ping past what arrived reports the gap (gap mode ok goes on)."""
    name = await _stream(nc)
    subject = f"{name.lower()}.a"
    b = await Batch.open(nc, flow=2, gap="ok")
    await b.send(subject, 1, START)
    assert await b.next() == {"type": "ack", "seq": 0, "msgs": 2}
    await b.send(subject, 2, APPEND)
    assert await b.next() == {"type": "ack", "seq": 2, "msgs": 2}
    await b.send(subject, 2, PING)
    assert await b.next() == {"type": "ack", "seq": 2, "msgs": 2}
    await b.send(subject, 3, PING)
    assert await b.next() == {"type": "gap", "last_seq": 3, "seq": 4}
    assert await b.next() == {"type": "ack", "seq": 2, "msgs": 2}
    await b.send(subject, 4, APPEND)
    assert await b.next() == {"type": "ack", "seq": 4, "msgs": 2}
    await b.send(subject, 100, PING)
    assert await b.next() == {"type": "gap", "last_seq": 5, "seq": 101}
    assert await b.next() == {"type": "ack", "seq": 100, "msgs": 2}
    await b.send(subject, 101, EOB)
    assert await b.next() == {"stream": name, "seq": 3, "batch": "uuid", "count": 100}


@pytest.mark.parametrize("gap", ["fail", "ok"])
async def test_a_refused_message(nc: NATS, gap: str) -> None:
    """A message the stream refuses gets an ``err`` answer for its sequence."""
    name = await _stream(nc)
    subject = f"{name.lower()}.a"
    b = await Batch.open(nc, gap=gap)
    await b.send(subject, 1, START)
    await b.send(subject, 2, APPEND, headers={"Nats-Expected-Last-Sequence": "100"})
    assert await b.next() == {"type": "ack", "seq": 0, "msgs": 10}
    refused = await b.next()
    assert (refused["type"], refused["seq"], refused["error"]["err_code"]) == ("err", 2, 10071)
    assert refused["error"]["description"] == "wrong last sequence: 1"
    if gap == "ok":
        await b.send(subject, 3, EOB)
    count = 1 if gap == "fail" else 2
    assert await b.next() == {"stream": name, "seq": 1, "batch": "uuid", "count": count}


async def test_duplicates(nc: NATS) -> None:
    """A first message already stored (same Nats-Msg-Id) is answered as a
    duplicate publish; later duplicates are skipped without an answer."""
    name = await _stream(nc)
    subject = f"{name.lower()}.a"
    await nc.request(subject, b"x", headers={"Nats-Msg-Id": "m1"}, timeout=5)
    b = await Batch.open(nc, batch_id="d1")
    await b.send(subject, 1, COMMIT, headers={"Nats-Msg-Id": "m1"})
    assert await b.next() == {"stream": name, "seq": 1, "duplicate": True, "batch": "d1",
                              "count": 1}
    c = await Batch.open(nc, batch_id="d2")
    await c.send(subject, 1, START, headers={"Nats-Msg-Id": "m2"})
    await c.send(subject, 2, APPEND, headers={"Nats-Msg-Id": "m2"})
    await c.send(subject, 3, COMMIT, headers={"Nats-Msg-Id": "m3"})
    assert await c.next() == {"type": "ack", "seq": 0, "msgs": 10}
    assert await c.next() == {"stream": name, "seq": 3, "batch": "d2", "count": 3}
    assert len(await _subjects(nc, name)) == 3


async def test_concurrent_batches_share_the_flow(nc: NATS) -> None:
    """A second open batch on the stream starts at one message per flow ack
    and ramps up to its share (500 / open batches); both end complete.
    Batches of random sizes, interleaved in random bursts (seed printed)."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    name = await _stream(nc)
    first = await Batch.open(nc, batch_id="one", flow=100)
    second = await Batch.open(nc, batch_id="two", flow=100)
    sizes = {"one": rng.randint(40, 120), "two": rng.randint(40, 120)}
    sent = {"one": 0, "two": 0}
    await first.send(f"{name.lower()}.one", 1, START)
    sent["one"] = 1
    assert await first.next() == {"type": "ack", "seq": 0, "msgs": 100}
    await second.send(f"{name.lower()}.two", 1, START)
    sent["two"] = 1
    assert await second.next() == {"type": "ack", "seq": 0, "msgs": 1}
    batches = {"one": first, "two": second}
    while any(sent[k] < sizes[k] for k in sent):
        key = rng.choice([k for k in sent if sent[k] < sizes[k]])
        for _ in range(rng.randint(1, 7)):
            if sent[key] == sizes[key]:
                break
            sent[key] += 1
            op = COMMIT if sent[key] == sizes[key] else APPEND
            await batches[key].send(f"{name.lower()}.{key}", sent[key], op)
    for key, batch in batches.items():
        answers = []
        while "type" in (answer := await batch.next()):
            answers.append(answer)
        assert answer["batch"] == key and answer["count"] == sizes[key], answer
        acked = [a["seq"] for a in answers if a["type"] == "ack"]
        assert acked == sorted(acked) and all(a["type"] == "ack" for a in answers), answers
        assert all(a["msgs"] <= 100 for a in answers), answers
    assert len(await _subjects(nc, name)) == sizes["one"] + sizes["two"]


@pytest.fixture(scope="module")
def sync_server(server_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server that syncs every write before its ack (`sync_interval: always`)."""
    directory = tmp_path_factory.mktemp("sync")
    config = write_config(Path(directory) / "sync.conf", "jetstream { sync_interval: always }\n")
    proc = start_server(server_kind, directory / "store", config=config)
    try:
        yield proc
    finally:
        proc.stop()


async def test_flow_acks_after_sync(sync_server: ServerProcess) -> None:
    """With every write synced before its ack, flow acks and the commit's pub
    ack still come once the messages are persisted, in order."""
    client = await nats.connect(sync_server.url, max_reconnect_attempts=0)
    try:
        name = await _stream(client)
        b = await Batch.open(client, flow=4)
        for seq in range(1, 13):
            op = START if seq == 1 else COMMIT if seq == 12 else APPEND
            await b.send(f"{name.lower()}.a", seq, op)
        answers = [await b.next() for _ in range(4)]
        assert answers == [
            {"type": "ack", "seq": 0, "msgs": 4},
            {"type": "ack", "seq": 4, "msgs": 4},
            {"type": "ack", "seq": 8, "msgs": 4},
            {"stream": name, "seq": 12, "batch": "uuid", "count": 12},
        ]
    finally:
        await client.close()


@pytest.mark.parametrize("seed", [random.randrange(1 << 30) for _ in range(3)])
async def test_batches_in_bursts_with_synced_writes(sync_server: ServerProcess, seed: int) -> None:
    """Four batches (random sizes and flows) in random bursts while every write
    waits for its fsync: each batch gets ordered flow acks and its pub ack, and
    the stream holds every message of each batch in its order."""
    print(f"seed {seed}")
    rng = random.Random(seed)
    client = await nats.connect(sync_server.url, max_reconnect_attempts=0)
    try:
        name = await _stream(client)
        keys = [f"k{i}" for i in range(4)]
        batches = {k: await Batch.open(client, batch_id=k, flow=rng.randint(1, 20)) for k in keys}
        sizes = {k: rng.randint(20, 80) for k in keys}
        sent = dict.fromkeys(keys, 0)
        while any(sent[k] < sizes[k] for k in keys):
            key = rng.choice([k for k in keys if sent[k] < sizes[k]])
            for _ in range(rng.randint(1, 9)):
                if sent[key] == sizes[key]:
                    break
                sent[key] += 1
                op = START if sent[key] == 1 else COMMIT if sent[key] == sizes[key] else APPEND
                await batches[key].send(f"{name.lower()}.{key}", sent[key], op, b"%d" % sent[key])
        for key, batch in batches.items():
            acked: list[int] = []
            while "type" in (answer := await batch.next()):
                assert answer["type"] == "ack", answer
                acked.append(int(answer["seq"]))
            assert answer["batch"] == key and answer["count"] == sizes[key], answer
            assert acked == sorted(acked) and acked[-1] < sizes[key], acked
        info = await api(client, f"STREAM.INFO.{name}", {"subjects_filter": ">"})
        assert info["state"]["messages"] == sum(sizes.values())
        assert info["state"]["subjects"] == {f"{name.lower()}.{k}": sizes[k] for k in keys}
        for key in keys:
            got = await api(client, f"STREAM.MSG.GET.{name}",
                            {"last_by_subj": f"{name.lower()}.{key}"})
            assert base64.b64decode(got["message"]["data"]) == b"%d" % sizes[key]
    finally:
        await client.close()


@pytest.mark.parametrize("retention", ["interest", "workqueue"])
async def test_retention_without_consumers(nc: NATS, retention: str) -> None:
    """An interest stream without consumers keeps nothing, a work queue keeps
    all: the pub ack names the last sequence either way."""
    name = await _stream(nc, retention=retention)
    b = await Batch.open(nc)
    for seq in range(1, 5):
        await b.send(f"{name.lower()}.a", seq, START if seq == 1 else COMMIT if seq == 4 else APPEND)
    assert await b.next() == {"type": "ack", "seq": 0, "msgs": 10}
    assert await b.next() == {"stream": name, "seq": 4, "batch": "uuid", "count": 4}
    state = (await api(nc, f"STREAM.INFO.{name}"))["state"]
    assert (state["messages"], state["last_seq"]) == (0 if retention == "interest" else 4, 4)


async def test_required_level_header_is_not_stored(nc: NATS) -> None:
    name = await _stream(nc)
    b = await Batch.open(nc)
    await b.send(f"{name.lower()}.a", 1, COMMIT, headers={"Nats-Required-Api-Level": "1", "A": "b"})
    assert await b.next() == {"stream": name, "seq": 1, "batch": "uuid", "count": 1}
    got = await api(nc, f"STREAM.MSG.GET.{name}", {"seq": 1})
    assert base64.b64decode(got["message"]["hdrs"]) == b"NATS/1.0\r\nA: b\r\n\r\n"
    c = await Batch.open(nc, batch_id="high")
    await c.send(f"{name.lower()}.a", 1, COMMIT, headers={"Nats-Required-Api-Level": "99"})
    assert (await c.next())["error"]["err_code"] == 10185


async def test_no_ack_stream_still_answers_the_commit(nc: NATS) -> None:
    """On a `no_ack` stream nats-server leaves out the first flow ack but sends
    the later flow acks, gaps and the commit's pub ack."""
    name = await _stream(nc, no_ack=True)
    subject = f"{name.lower()}.a"
    b = await Batch.open(nc, flow=2)
    for seq in range(1, 4):
        await b.send(subject, seq, START if seq == 1 else COMMIT if seq == 3 else APPEND)
    assert await b.next() == {"type": "ack", "seq": 2, "msgs": 2}
    assert await b.next() == {"stream": name, "seq": 3, "batch": "uuid", "count": 3}
    c = await Batch.open(nc, batch_id="g", flow=2)
    await c.send(subject, 1, START)
    await c.send(subject, 3, APPEND)
    assert await c.next() == {"type": "gap", "last_seq": 2, "seq": 3}
    assert await c.next() == {"stream": name, "seq": 4, "batch": "g", "count": 1}


async def test_ping_for_an_unknown_batch(nc: NATS) -> None:
    name = await _stream(nc)
    b = await Batch.open(nc, batch_id="never")
    await b.send(f"{name.lower()}.a", 1, PING)
    assert _err(await b.next()) == 10208


async def test_a_full_discard_new_stream_ends_the_batch(nc: NATS) -> None:
    name = await _stream(nc, max_msgs=2, discard="new")
    b = await Batch.open(nc, flow=3)
    for seq in range(1, 5):
        await b.send(f"{name.lower()}.a", seq, START if seq == 1 else COMMIT if seq == 4 else APPEND)
    assert await b.next() == {"type": "ack", "seq": 0, "msgs": 3}
    refused = await b.next()
    assert (refused["type"], refused["seq"]) == ("err", 3)
    assert refused["error"] == {"code": 503, "err_code": 10077,
                                "description": "maximum messages exceeded"}
    assert await b.next() == {"stream": name, "seq": 2, "batch": "uuid", "count": 2}
    b4 = await Batch.open(nc)
    await b4.send(f"{name.lower()}.a", 4, APPEND)  # the batch ended: unknown now
    assert _err(await b4.next()) == 10208
