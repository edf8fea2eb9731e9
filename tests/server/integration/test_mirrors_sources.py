"""Mirrors and sources on both servers (nats-server is the oracle), same configs.

Waits are bounded: `until` polls STREAM.INFO against a deadline (nats-server
copies through internal consumers, so its mirrors trail by a few milliseconds).
"""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import Callable
from typing import Any

import nats
import pytest
from js_helpers import api, err, info, pub
from nats.aio.client import Client as NATS
from nats.js.api import StreamConfig, StreamSource, SubjectTransform

from jetstream_server.jetstream.sourcing.headers import stream_identity
from jetstream_testing.process import ServerProcess

pytestmark = pytest.mark.asyncio


async def create(nc: NATS, **config: Any) -> dict[str, Any]:
    """STREAM.CREATE with exactly `config` (no default subjects: mirrors have none)."""
    resp = await api(nc, f"STREAM.CREATE.{config['name']}", config)
    assert "error" not in resp, resp
    return resp


async def until(nc: NATS, name: str, check: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
    """STREAM.INFO of `name` once `check` holds (TimeoutError after `timeout` seconds)."""
    async with asyncio.timeout(timeout):
        while True:
            resp = await info(nc, name)
            if "error" not in resp and check(resp):
                return resp
            await asyncio.sleep(0.02)


async def messages(nc: NATS, name: str) -> list[dict[str, Any]]:
    """Every stored message of a stream, in order (seq, subject, data, headers, time)."""
    state = (await info(nc, name))["state"]
    out = []
    seq = state["first_seq"]
    while state["messages"] and seq <= state["last_seq"]:
        resp = await api(nc, f"STREAM.MSG.GET.{name}", {"seq": seq, "next_by_subj": ">"})
        if "error" in resp:
            break
        msg = resp["message"]
        out.append({
            "seq": msg["seq"], "subject": msg["subject"],
            "data": base64.b64decode(msg.get("data", "")),
            "hdrs": base64.b64decode(msg["hdrs"]).decode() if msg.get("hdrs") else "",
            "time": msg["time"],
        })
        seq = msg["seq"] + 1
    return out


@pytest.fixture
async def nc(server: ServerProcess) -> Any:
    client = await nats.connect(server.url, max_reconnect_attempts=0)
    yield client
    await client.close()


async def fill_origin(nc: NATS, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        await pub(nc, f"o.{'ab'[i % 2]}", b"m%d" % i, {"Nats-Msg-Id": f"id{i}", "X-I": str(i)})


async def test_mirror_copies_and_follows(nc: NATS) -> None:
    await create(nc, name="O", subjects=["o.>"])
    await fill_origin(nc, 5)
    created = await create(nc, name="M", mirror={"name": "O"})
    config = created["config"]
    assert "subjects" not in config
    assert config["mirror"] == {"name": "O"} and config["mirror_direct"] is False
    await until(nc, "M", lambda i: i["state"]["last_seq"] == 5)
    await fill_origin(nc, 3, start=5)
    mirrored = await until(nc, "M", lambda i: i["state"]["last_seq"] == 8)
    assert mirrored["mirror"]["name"] == "O" and mirrored["mirror"]["lag"] == 0
    assert isinstance(mirrored["mirror"]["active"], int)
    assert await messages(nc, "M") == await messages(nc, "O")  # same seqs, subjects, headers, times
    # a mirror's config can not change, and it takes no subjects
    resp = await api(nc, "STREAM.UPDATE.M", {"name": "M", "mirror": {"name": "O", "filter_subject": "o.a"}})
    assert err(resp) == (400, 10055, "stream mirror configuration can not be updated")
    resp = await api(nc, "STREAM.UPDATE.M", {"name": "M", "mirror": {"name": "O"}, "subjects": ["m"]})
    assert err(resp) == (400, 10034, "stream mirrors can not contain subjects")


async def test_mirror_filter_and_start_seq(nc: NATS) -> None:
    await create(nc, name="O", subjects=["o.>"])
    await fill_origin(nc, 10)
    await create(nc, name="M", mirror={"name": "O", "opt_start_seq": 4, "filter_subject": "o.a"})
    await create(nc, name="T", mirror={"name": "O", "subject_transforms": [{"src": "o.b", "dest": "t.b"}]})
    m = await until(nc, "M", lambda i: i["state"]["last_seq"] == 9)
    wanted = [x for x in await messages(nc, "O") if x["seq"] >= 4 and x["subject"] == "o.a"]
    assert await messages(nc, "M") == wanted
    assert m["state"]["messages"] == len(wanted) and m["state"]["first_seq"] == wanted[0]["seq"]
    assert m["mirror"]["filter_subject"] == "o.a"
    t = await until(nc, "T", lambda i: i["state"]["last_seq"] == 10)
    assert [x["subject"] for x in await messages(nc, "T")] == ["t.b"] * 5
    assert t["mirror"]["subject_transforms"] == [{"src": "o.b", "dest": "t.b"}]
    start = (await api(nc, "STREAM.MSG.GET.O", {"seq": 7}))["message"]["time"]
    await create(nc, name="ST", mirror={"name": "O", "opt_start_time": start})
    st = await until(nc, "ST", lambda i: i["state"]["last_seq"] == 10)
    assert (st["state"]["first_seq"], st["state"]["messages"]) == (7, 4)


async def test_sources_merge_with_filters_and_transforms(nc: NATS) -> None:
    await create(nc, name="A", subjects=["a.>"])
    await create(nc, name="B", subjects=["b.>"])
    for i in range(4):
        await pub(nc, f"a.{i}", b"a%d" % i)
        await pub(nc, f"b.{i % 2}", b"b%d" % i, {"Nats-Expected-Last-Sequence": str(i)} if i == 0 else None)
    created = await create(nc, name="S", subjects=["s.>"], sources=[
        {"name": "A", "subject_transforms": [{"src": "a.>", "dest": "x.a.>"}]},
        {"name": "B", "filter_subject": "b.1", "opt_start_seq": 3},
    ])
    assert [s["name"] for s in created["config"]["sources"]] == ["A", "B"]
    assert "duplicate_window" not in created["config"]  # no default dedup window with sources
    await pub(nc, "s.own", b"mine")
    s = await until(nc, "S", lambda i: i["state"]["messages"] == 4 + 1 + 1)
    assert sorted(src["name"] for src in s["sources"]) == ["A", "B"]
    assert all(src["lag"] == 0 for src in s["sources"])
    assert {src["name"]: src["seq"] for src in s["sources"]} == {"A": 4, "B": 4}  # last origin seq copied
    got = await messages(nc, "S")
    by_subject = sorted((x["subject"], x["data"]) for x in got)
    assert by_subject == sorted(
        [(f"x.a.{i}", b"a%d" % i) for i in range(4)] + [("b.1", b"b3"), ("s.own", b"mine")]
    )
    headers = {x["data"]: x["hdrs"] for x in got}
    a_id = stream_identity((await info(nc, "A"))["created"])
    b_id = stream_identity((await info(nc, "B"))["created"])
    assert f"Nats-Stream-Source: A 2 a.> x.a.> a.1 {a_id}\r\n" in headers[b"a1"]
    assert f"Nats-Stream-Source: B 4 b.1 > b.1 {b_id}\r\n" in headers[b"b3"]
    assert headers[b"mine"] == ""
    # more messages on the origins follow
    await pub(nc, "a.9", b"a9")
    await pub(nc, "b.1", b"b9")
    await pub(nc, "b.0", b"filtered out")
    await until(nc, "S", lambda i: i["state"]["messages"] == 8)


async def test_promoting_a_mirror(nc: NATS) -> None:
    await create(nc, name="O", subjects=["o.>"])
    await fill_origin(nc, 3)
    await create(nc, name="M", mirror={"name": "O"})
    await until(nc, "M", lambda i: i["state"]["last_seq"] == 3)
    promoted = await api(nc, "STREAM.UPDATE.M", {"name": "M", "subjects": ["m.>"]})
    assert "error" not in promoted, promoted
    assert "mirror" not in promoted["config"] and "mirror" not in promoted
    assert await pub(nc, "m.x", b"own") == {"stream": "M", "seq": 4}
    await fill_origin(nc, 2, start=3)
    assert (await info(nc, "O"))["state"]["last_seq"] == 5
    state = (await info(nc, "M"))["state"]
    assert state["messages"] == 4 and state["last_seq"] == 4


async def test_catch_up_after_restart(server: ServerProcess) -> None:
    nc = await nats.connect(server.url)
    try:
        await create(nc, name="O", subjects=["o.>"])
        await create(nc, name="M", mirror={"name": "O"})
        await create(nc, name="S", sources=[{"name": "O", "filter_subject": "o.a"}])
        await fill_origin(nc, 6)
        await until(nc, "M", lambda i: i["state"]["last_seq"] == 6)
        await until(nc, "S", lambda i: i["state"]["messages"] == 3)
    finally:
        await nc.close()
    server.restart()
    nc = await nats.connect(server.url)
    try:
        await fill_origin(nc, 4, start=6)
        await until(nc, "M", lambda i: i["state"]["last_seq"] == 10)
        s = await until(nc, "S", lambda i: i["state"]["messages"] == 5)
        assert s["sources"][0]["lag"] == 0
        assert await messages(nc, "M") == await messages(nc, "O")
        got = await messages(nc, "S")
        assert [x["data"] for x in got] == [b"m%d" % i for i in range(0, 10, 2)]  # no duplicates, none lost
    finally:
        await nc.close()


async def test_mirror_created_before_its_origin(nc: NATS) -> None:
    await create(nc, name="M", mirror={"name": "LATER"})
    early = await until(nc, "M", lambda i: "error" in i["mirror"])
    assert early["mirror"]["name"] == "LATER" and early["state"]["messages"] == 0
    assert early["mirror"]["error"] == {"code": 404, "err_code": 10059, "description": "stream not found"}
    await create(nc, name="LATER", subjects=["later"])
    await pub(nc, "later", b"x")
    await until(nc, "M", lambda i: i["state"]["messages"] == 1 and "error" not in i["mirror"], timeout=20)


async def test_publish_with_a_source_header_is_refused(nc: NATS) -> None:
    await create(nc, name="O", subjects=["o.>"])
    ack = await pub(nc, "o.x", b"x", {"Nats-Stream-Source": "X 1 > > o.x"})
    assert ack == {"stream": "O", "seq": 0, "error": {
        "code": 400, "err_code": 10227, "description": "message stream source header is not allowed"}}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"mirror": {"name": "O"}, "first_seq": 5}, (400, 10143, "stream mirrors can not have first sequence configured")),
        ({"mirror": {"name": "O"}, "sources": [{"name": "O"}]}, (400, 10031, "stream mirrors can not also contain other sources")),
        ({"mirror": {"name": "O", "filter_subject": "o.a", "subject_transforms": [{"src": "o.b", "dest": "x"}]}},
         (400, 10150, "mirror with multiple subject transforms cannot also have a single subject filter")),
        ({"mirror": {"name": "O.x"}}, (400, 10142, "mirrored stream name is invalid")),
        ({"mirror": {"name": "O", "subject_transforms": [{"src": "o.*", "dest": "x"}, {"src": "o.a", "dest": "y"}]}},
         (400, 10152, "mirror subject filters can not overlap")),
        ({"mirror": {"name": "O", "subject_transforms": [{"src": "o.*", "dest": "x.$2"}]}},
         (400, 10154, "mirror transform: invalid mapping destination: wildcard index out of range in $2: [2]")),
        ({"sources": [{"name": "O"}, {"name": "O"}]}, (400, 10140, "duplicate source configuration detected")),
        ({"sources": [{"name": "O", "filter_subject": "o.a", "subject_transforms": [{"src": "o.b", "dest": "x"}]}]},
         (400, 10144, "source with multiple subject transforms cannot also have a single subject filter")),
        ({"sources": [{"name": "O", "subject_transforms": [{"src": "o.*", "dest": "x.$1"}, {"src": "o.a", "dest": "y"}]}]},
         (400, 10147, "source filters can not overlap")),
        ({"sources": [{"name": "O", "subject_transforms": [{"src": "o..", "dest": "x"}]}]},
         (400, 10145, "source transform source: invalid subject o..")),
        ({"sources": [{"name": ""}]}, (400, 10141, "sourced stream name is invalid")),
        ({"mirror": {"name": "O"}, "max_msg_size": 10}, (400, 10030, "stream mirror must have max message size >= source")),
        ({"sources": [{"name": "O"}], "max_msg_size": 10}, (400, 10046, "stream source must have max message size >= target")),
    ],
)
async def test_config_errors(
    shared_server: ServerProcess, config: dict[str, Any], expected: tuple[int, int, str]
) -> None:
    nc = await nats.connect(shared_server.url)
    try:
        await create(nc, name="O", subjects=["o.>"], max_msg_size=100)
        assert err(await api(nc, "STREAM.CREATE.X", {"name": "X", **config})) == expected
    finally:
        await nc.close()


async def test_cycles_are_refused(nc: NATS) -> None:
    await create(nc, name="P", subjects=["p.>"])
    await create(nc, name="Q", subjects=["q.>"], sources=[{"name": "P"}])
    resp = await api(nc, "STREAM.UPDATE.P", {"name": "P", "subjects": ["p.>"], "sources": [{"name": "Q"}]})
    assert err(resp) == (500, 10052, "detected cycle")
    resp = await api(nc, "STREAM.CREATE.R", {"name": "R", "sources": [{"name": "R"}]})
    assert err(resp) == (500, 10052, "detected cycle")


async def test_mirror_direct_follows_origin_and_answers_for_it(nc: NATS) -> None:
    await create(nc, name="KVO", subjects=["k.>"], allow_direct=True)
    await pub(nc, "k.one", b"1")
    created = await create(nc, name="MD", mirror={"name": "KVO"})
    assert created["config"]["mirror_direct"] is True  # inherited from the origin's allow_direct
    await until(nc, "MD", lambda i: i["state"]["messages"] == 1)
    assert (await api(nc, "STREAM.DELETE.KVO"))["success"] is True
    # the origin is gone: the mirror answers direct gets made for the origin's name
    msg = await nc.request("$JS.API.DIRECT.GET.KVO.k.one", b"", timeout=5)
    assert msg.data == b"1"
    assert msg.headers is not None and msg.headers["Nats-Stream"] == "MD"
    assert msg.headers["Nats-Subject"] == "k.one" and msg.headers["Nats-Sequence"] == "1"


CRASH_SEEDS = [11, 23, 37]


@pytest.mark.crash
@pytest.mark.parametrize("seed", CRASH_SEEDS)
async def test_kill_while_copying_loses_and_doubles_nothing(server: ServerProcess, seed: int) -> None:
    """Origin filled in small bursts, mirror and source created, the server
    killed while they copy; after the restart both finish with exactly the
    origin's messages (no duplicate in the source, no gap in the mirror)."""
    rng = random.Random(seed)
    print(f"seed={seed}")
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await create(nc, name="O", subjects=["o.>"])
        for burst in range(rng.randint(8, 14)):
            for i in range(rng.randint(50, 150)):
                nc_subject = f"o.{'ab'[(burst + i) % 2]}"
                await nc.publish(nc_subject, b"b%d-%d" % (burst, i))
            await nc.flush()
        await create(nc, name="M", mirror={"name": "O"})
        await create(nc, name="S", sources=[{"name": "O", "filter_subject": "o.a"}])
        for i in range(rng.randint(20, 80)):  # more while they copy
            await nc.publish("o.a", b"late-%d" % i)
        await nc.flush()
        await asyncio.sleep(rng.random() * 0.01)  # the kill lands at a random point of the copy
        before = (await info(nc, "M"))["state"]["last_seq"], (await info(nc, "O"))["state"]["last_seq"]
        print(f"seed={seed} mirror at {before[0]} of {before[1]} when killed")
    finally:
        await nc.close()
    server.kill()
    server.restart()
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        origin = (await info(nc, "O"))["state"]
        wanted = (await api(nc, "STREAM.INFO.O", {"subjects_filter": "o.a"}))["state"]["subjects"]["o.a"]
        m = await until(nc, "M", lambda i: i["state"]["last_seq"] == origin["last_seq"], timeout=30)
        assert m["state"]["messages"] == origin["messages"] and m["mirror"]["lag"] == 0
        s = await until(nc, "S", lambda i: i["state"]["messages"] >= wanted, timeout=30)
        assert s["state"]["messages"] == wanted, f"seed={seed}"
        for seq in rng.sample(range(1, origin["last_seq"] + 1), 10):
            o = (await api(nc, "STREAM.MSG.GET.O", {"seq": seq}))["message"]
            assert (await api(nc, "STREAM.MSG.GET.M", {"seq": seq}))["message"] == o
    finally:
        await nc.close()


async def test_work_queue_and_interest_origins(nc: NATS) -> None:
    """A source drains a work queue; an interest stream keeps a message until its mirror copied it."""
    await create(nc, name="WQ", subjects=["w.>"], retention="workqueue")
    await create(nc, name="IN", subjects=["i.>"], retention="interest")
    for _ in range(3):
        await pub(nc, "w.x", b"early")
        await pub(nc, "i.x", b"early")  # nobody is interested yet: not kept
    await create(nc, name="S", sources=[{"name": "WQ"}])
    await create(nc, name="M", mirror={"name": "IN"})
    await until(nc, "S", lambda i: i["state"]["messages"] == 3)
    await until(nc, "M", lambda i: i["mirror"]["active"] >= 0)  # nats-server: its consumer is there
    for _ in range(3):
        await pub(nc, "w.x", b"late")
        await pub(nc, "i.x", b"late")
    await until(nc, "S", lambda i: i["state"]["messages"] == 6)
    m = await until(nc, "M", lambda i: i["state"]["messages"] == 3)
    assert (m["state"]["first_seq"], m["state"]["last_seq"]) == (4, 6)
    for name in ("WQ", "IN"):
        state = await until(nc, name, lambda i: i["state"]["messages"] == 0)
        assert state["state"]["last_seq"] == 6


async def test_source_progress_survives_a_purge_and_a_restart(server: ServerProcess) -> None:
    nc = await nats.connect(server.url)
    try:
        await create(nc, name="O", subjects=["o.>"])
        await create(nc, name="S", sources=[{"name": "O"}])
        await fill_origin(nc, 4)
        await until(nc, "S", lambda i: i["state"]["messages"] == 4)
        assert (await api(nc, "STREAM.PURGE.S"))["purged"] == 4
    finally:
        await nc.close()
    server.restart()
    nc = await nats.connect(server.url)
    try:
        await fill_origin(nc, 2, start=4)
        s = await until(nc, "S", lambda i: i["state"]["messages"] >= 2)
        assert s["state"]["messages"] == 2  # only the new ones: nothing copied twice
        assert [x["data"] for x in await messages(nc, "S")] == [b"m4", b"m5"]
    finally:
        await nc.close()


async def test_updating_sources(nc: NATS) -> None:
    await create(nc, name="A", subjects=["a.>"])
    await create(nc, name="B", subjects=["b.>"])
    await create(nc, name="S", subjects=["s.>"], sources=[{"name": "A"}])
    await pub(nc, "a.1", b"a1")
    await pub(nc, "b.1", b"b1")
    await until(nc, "S", lambda i: i["state"]["messages"] == 1)
    resp = await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"],
                                             "sources": [{"name": "A"}, {"name": "B"}]})
    assert [src["name"] for src in resp["config"]["sources"]] == ["A", "B"]
    await until(nc, "S", lambda i: i["state"]["messages"] == 2)  # B from its start, A not again
    resp = await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"], "sources": [{"name": "B"}]})
    assert [src["name"] for src in resp["config"]["sources"]] == ["B"]
    await pub(nc, "a.2", b"a2")
    await pub(nc, "b.2", b"b2")
    s = await until(nc, "S", lambda i: i["state"]["messages"] == 3)
    assert [src["name"] for src in s["sources"]] == ["B"]
    assert sorted(x["data"] for x in await messages(nc, "S")) == [b"a1", b"b1", b"b2"]


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"mirror": "O"}, "mirror"),
        ({"sources": {"name": "O"}}, "sources"),
        ({"subject_transform": [], "subjects": ["x"]}, "subject_transform"),
        ({"republish": 5, "subjects": ["x"]}, "republish"),
        ({"mirror": {"name": "O", "opt_start_seq": -1}}, "opt_start_seq"),
        ({"mirror": {"name": "O", "opt_start_time": "yesterday"}}, "yesterday"),
        ({"sources": [{"name": "O", "subject_transforms": [1]}]}, "subject_transforms"),
        ({"republish": {"src": "x", "dest": "y", "headers_only": "yes"}, "subjects": ["x"]}, "headers_only"),
    ],
)
async def test_malformed_json_is_named(shared_server: ServerProcess, config: dict[str, Any], named: str) -> None:
    """Both servers answer 10025 invalid JSON, naming the field (each in its own words)."""
    nc = await nats.connect(shared_server.url)
    try:
        code, err_code, description = err(await api(nc, "STREAM.CREATE.X", {"name": "X", **config}))
        assert (code, err_code) == (400, 10025) and named in description, description
    finally:
        await nc.close()


async def test_through_nats_py_jetstream_api(nc: NATS) -> None:
    """nats-py's own calls: add_stream with mirror / sources, stream_info's typed mirror and sources."""
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="O", subjects=["o.>"], allow_direct=True))
    for i in range(3):
        await js.publish(f"o.{i}", b"x")
    mirror = await js.add_stream(StreamConfig(name="M", mirror=StreamSource(name="O")))
    assert mirror.config.mirror_direct is True and mirror.config.mirror is not None
    await js.add_stream(StreamConfig(name="S", sources=[
        StreamSource(name="O", subject_transforms=[SubjectTransform(src="o.>", dest="s.>")])]))
    await until(nc, "M", lambda i: i["state"]["messages"] == 3)
    await until(nc, "S", lambda i: i["state"]["messages"] == 3)
    m, s = await js.stream_info("M"), await js.stream_info("S")
    assert m.mirror is not None and (m.mirror.name, m.mirror.lag) == ("O", 0)
    assert s.sources is not None and (s.sources[0].name, s.sources[0].lag) == ("O", 0)
    assert s.config.sources is not None
    assert s.config.sources[0].subject_transforms == [SubjectTransform(src="o.>", dest="s.>")]
    got = await js.get_msg("S", 1)
    assert got.subject == "s.0"


async def test_a_source_added_later_starts_after_what_the_stream_holds(nc: NATS) -> None:
    """nats-server starts a new source at the stream's last message time when the
    stream's first sequence is past 1, or when opt_start_time is older than it."""
    await create(nc, name="O", subjects=["o.>"])
    await create(nc, name="S", subjects=["s.>"])
    await create(nc, name="P", subjects=["p.>"])
    await pub(nc, "o.1", b"before")
    await pub(nc, "s.1", b"own")
    await pub(nc, "s.2", b"own")
    await pub(nc, "p.1", b"own")
    assert (await api(nc, "STREAM.PURGE.S", {"keep": 1}))["purged"] == 1
    await pub(nc, "o.2", b"after")
    for name, source in (("S", {"name": "O"}), ("P", {"name": "O", "opt_start_time": "2020-01-01T00:00:00Z"})):
        resp = await api(nc, f"STREAM.UPDATE.{name}", {"name": name, "subjects": [f"{name.lower()}.>"],
                                                       "sources": [source]})
        assert "error" not in resp, resp
        got = await until(nc, name, lambda i: i["sources"][0].get("seq") == 2)
        assert got["state"]["messages"] == 2
        assert [x["data"] for x in await messages(nc, name)][-1] == b"after"
