"""Stream `subject_transform` and `republish`, on both servers (nats-server is the oracle).

The mapped subjects are compared with the bundled server's own transform code
(`jetstream_server.jetstream.transform`), so on nats-server the same test
checks that implementation, partition hashes included; error answers are the
ones nats-server gives.
"""

from __future__ import annotations

import asyncio
import base64
import random
from typing import Any

import nats
import pytest
from js_helpers import api, create, err, info, pub
from nats.aio.msg import Msg
from nats.js.api import KeyValueConfig, RePublish

from jetstream_server.jetstream.transform import SubjectTransform
from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.asyncio


MAPPING_SRC = "in.*.*"
MAPPING_DEST = (
    "m.{{partition(7,1,2)}}.{{wildcard(2)}}.{{splitFromLeft(1,2)}}.{{sliceFromRight(2,3)}}"
    ".{{split(1,-)}}.{{splitFromRight(2,1)}}.{{sliceFromLeft(1,2)}}.{{partition(3)}}.$1"
    ".{{left(1,2)}}.{{right(2,2)}}"
)
SUBJECTS = ["in.ab-cd.efghij", "in.x.y", "in.-lead-.z9", "in.order-1001.customer42", "in.a--b.cc"]
SEED = 20261126


def random_subjects(seed: int, count: int) -> list[str]:
    """Tokens of 1-12 characters from a small alphabet with dashes, so splits and slices vary."""
    rng = random.Random(seed)
    alphabet = "ab-cd1-23xyz-"
    return [
        "in." + ".".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(2))
        for _ in range(count)
    ]


async def test_subject_transform_maps_stored_subjects(server: ServerProcess) -> None:
    nc = await nats.connect(server.url)
    try:
        created = await create(
            nc, name="T", subjects=["in.>"], subject_transform={"src": MAPPING_SRC, "dest": MAPPING_DEST}
        )
        assert created["config"]["subject_transform"] == {"src": MAPPING_SRC, "dest": MAPPING_DEST}
        transform = SubjectTransform(MAPPING_SRC, MAPPING_DEST)
        print(f"seed={SEED}")
        for i, subject in enumerate(SUBJECTS + random_subjects(SEED, 40), 1):
            ack = await pub(nc, subject, b"%d" % i)
            # stored even when the mapping yields an empty token (as nats-server does)
            assert "error" not in ack, ack
            stored = (await api(nc, "STREAM.MSG.GET.T", {"seq": ack["seq"]}))["message"]["subject"]
            assert stored == transform.match(subject), (subject, f"seed={SEED}")
        # a subject the transform does not match is stored unchanged
        ack = await pub(nc, "in.one.two.three", b"x")
        stored = (await api(nc, "STREAM.MSG.GET.T", {"seq": ack["seq"]}))["message"]["subject"]
        assert stored == "in.one.two.three"
    finally:
        await nc.close()


@pytest.mark.parametrize(
    ("transform", "expected"),
    [
        ({"src": "a.*", "dest": "b.{{wildcard(2)}}"},
         (400, 10156, "stream transform: invalid mapping destination: wildcard index out of range "
                      "in {{wildcard(2)}}: [2]")),
        ({"src": "a.*", "dest": "b.{{nope(1)}}"},
         (400, 10156, "stream transform: invalid mapping destination: unknown function in {{nope(1)}}")),
        ({"src": "a.*", "dest": "b.{{splitFromLeft(1)}}"},
         (400, 10156, "stream transform: invalid mapping destination: not enough arguments passed to "
                      "the function in {{splitFromLeft(1)}}")),
        ({"src": "a.*", "dest": "b.*"}, (400, 10156, "stream transform: invalid subject")),
        ({"src": "a..b", "dest": "c"}, (400, 10155, "stream transform source: invalid subject a..b")),
        ({"src": "a.>", "dest": "b"}, (400, 10156, "stream transform: invalid subject")),
    ],
)
async def test_subject_transform_errors(
    shared_server: ServerProcess, transform: dict[str, str], expected: tuple[int, int, str]
) -> None:
    nc = await nats.connect(shared_server.url)
    try:
        resp = await api(nc, "STREAM.CREATE.E", {"name": "E", "subjects": ["a.>"], "subject_transform": transform})
        assert err(resp) == expected
    finally:
        await nc.close()


async def _collect(nc: Any, subject: str) -> tuple[list[Msg], asyncio.Event, Any]:
    got: list[Msg] = []
    event = asyncio.Event()

    async def on_msg(msg: Msg) -> None:
        got.append(msg)
        event.set()

    sub = await nc.subscribe(subject, cb=on_msg)
    return got, event, sub


async def _wait_for(got: list[Msg], count: int) -> None:
    async with asyncio.timeout(5):
        while len(got) < count:
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("headers_only", [False, True])
async def test_republish_headers(server: ServerProcess, headers_only: bool) -> None:
    nc = await nats.connect(server.url)
    try:
        cfg: dict[str, Any] = {"src": "r.*", "dest": "rp.{{wildcard(1)}}"}
        if headers_only:
            cfg["headers_only"] = True
        created = await create(nc, name="R", subjects=["r.>"], republish=cfg)
        assert created["config"]["republish"] == cfg
        got, _, _ = await _collect(nc, "rp.>")
        await pub(nc, "r.a", b"one")
        await pub(nc, "r.b", b"two!", {"X-Mine": "kept"})
        await pub(nc, "r.a", b"three")
        await pub(nc, "r.a.deeper", b"not matched by src")
        await _wait_for(got, 3)
        await nc.flush()
        assert [m.subject for m in got] == ["rp.a", "rp.b", "rp.a"]
        for seq, (msg, last, payload) in enumerate(zip(got, ["0", "0", "1"], [b"one", b"two!", b"three"], strict=True), 1):
            stored = (await api(nc, "STREAM.MSG.GET.R", {"seq": seq}))["message"]
            assert msg.headers is not None
            assert msg.headers["Nats-Stream"] == "R"
            assert msg.headers["Nats-Subject"] == stored["subject"]
            assert msg.headers["Nats-Sequence"] == str(seq)
            assert msg.headers["Nats-Last-Sequence"] == last
            assert msg.headers["Nats-Time-Stamp"] == stored["time"]
            if headers_only:
                assert msg.data == b""
                assert msg.headers["Nats-Msg-Size"] == str(len(payload))
            else:
                assert msg.data == payload
                assert "Nats-Msg-Size" not in msg.headers
        assert got[1].headers is not None and got[1].headers["X-Mine"] == "kept"
        stored_hdrs = base64.b64decode((await api(nc, "STREAM.MSG.GET.R", {"seq": 2}))["message"]["hdrs"])
        assert b"Nats-Stream" not in stored_hdrs  # the stored message keeps only its own headers
    finally:
        await nc.close()


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"subjects": ["x.>"], "republish": {"src": ">", "dest": "x.>"}},
         (500, 10052, "stream configuration for republish destination forms a cycle")),
        ({"subjects": ["x.>"], "republish": {"src": "x.*", "dest": "y.{{wildcard(3)}}"}},
         (500, 10052, "stream configuration for republish with transform from 'x.*' to "
                      "'y.{{wildcard(3)}}' not valid")),
    ],
)
async def test_republish_errors(
    shared_server: ServerProcess, config: dict[str, Any], expected: tuple[int, int, str]
) -> None:
    nc = await nats.connect(shared_server.url)
    try:
        assert err(await api(nc, "STREAM.CREATE.E", {"name": "E", **config})) == expected
        # the implicit form needs a transform destination without placeholders
        implicit = await api(nc, "STREAM.CREATE.I", {
            "name": "I", "subjects": ["i.*"], "subject_transform": {"src": "i.*", "dest": "ii.$1"},
            "republish": {"src": ">", "dest": ">"},
        })
        assert err(implicit) == (
            500, 10052, "stream configuration for republish with transform from 'ii.$1' to 'ii.$1' not valid"
        )
    finally:
        await nc.close()


async def test_republish_empty_source_and_implicit_transform(server: ServerProcess) -> None:
    nc = await nats.connect(server.url)
    try:
        created = await create(nc, name="A", subjects=["a.>"], republish={"dest": "ra.>"})
        assert created["config"]["republish"] == {"src": ">", "dest": "ra.>"}
        created = await create(
            nc, name="B", subjects=["b.>"], subject_transform={"src": "b.>", "dest": "bb.>"},
            republish={"src": ">", "dest": ">"},
        )
        assert created["config"]["republish"] == {"src": "bb.>", "dest": "bb.>"}
        got, _, _ = await _collect(nc, "bb.>")
        await pub(nc, "b.k", b"v")
        await _wait_for(got, 1)
        assert got[0].subject == "bb.k" and got[0].headers is not None
        assert got[0].headers["Nats-Subject"] == "bb.k"
        assert (await info(nc, "B"))["state"]["messages"] == 1
    finally:
        await nc.close()


async def test_kv_republish(server: ServerProcess) -> None:
    nc = await nats.connect(server.url)
    try:
        js = nc.jetstream()
        kv = await js.create_key_value(
            KeyValueConfig(bucket="CFG", history=5, republish=RePublish(src=">", dest="watch.>"))
        )
        got, _, _ = await _collect(nc, "watch.>")
        await kv.put("color", b"red")
        await kv.put("color", b"blue")
        await kv.delete("color")
        await _wait_for(got, 3)
        assert [m.subject for m in got] == ["watch.$KV.CFG.color"] * 3
        assert [m.data for m in got] == [b"red", b"blue", b""]
        assert [m.headers["Nats-Last-Sequence"] for m in got if m.headers] == ["0", "1", "2"]
        assert got[2].headers is not None and got[2].headers["KV-Operation"] == "DEL"
    finally:
        await nc.close()


async def test_updating_the_subject_transform(server: ServerProcess) -> None:
    nc = await nats.connect(server.url)
    try:
        await create(nc, name="U", subjects=["u.*"], subject_transform={"src": "u.*", "dest": "one.$1"})
        await pub(nc, "u.a")
        resp = await api(nc, "STREAM.UPDATE.U", {"name": "U", "subjects": ["u.*"],
                                                 "subject_transform": {"src": "u.*", "dest": "two.$1"}})
        assert resp["config"]["subject_transform"] == {"src": "u.*", "dest": "two.$1"}
        await pub(nc, "u.b")
        resp = await api(nc, "STREAM.UPDATE.U", {"name": "U", "subjects": ["u.*"]})
        assert "subject_transform" not in resp["config"]
        await pub(nc, "u.c")
        subjects = [(await api(nc, "STREAM.MSG.GET.U", {"seq": seq}))["message"]["subject"] for seq in (1, 2, 3)]
        assert subjects == ["one.a", "two.b", "u.c"]
    finally:
        await nc.close()
