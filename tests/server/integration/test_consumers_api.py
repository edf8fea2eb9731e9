"""Consumer API conformance: create forms, actions, defaults, errors, info, list, names,
delete, pause, reset — against the bundled server and the real nats-server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats.errors
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

pytestmark = pytest.mark.asyncio


async def api(nc: NATS, subject: str, body: Any = None, raw: bytes | None = None) -> dict[str, Any]:
    data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
    msg = await nc.request("$JS.API." + subject, data, timeout=2)
    return json.loads(msg.data)  # type: ignore[no-any-return]


def err_code(resp: dict[str, Any]) -> int | None:
    return resp.get("error", {}).get("err_code")


async def seed(js: JetStreamContext, n: int = 10, stream: str = "S", **kw: Any) -> None:
    await js.add_stream(name=stream, subjects=[f"{stream.lower()}.>"], **kw)
    for i in range(n):
        await js.publish(f"{stream.lower()}.{i % 3}", b"x%d" % i)


async def test_create_defaults_durable_and_ephemeral(nc: NATS, js: JetStreamContext) -> None:
    await seed(js)
    r = await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {"durable_name": "C", "ack_policy": "explicit"}})
    assert r["type"] == "io.nats.jetstream.api.v1.consumer_create_response"
    cfg = r["config"]
    assert cfg["name"] == "C" and cfg["durable_name"] == "C"
    assert cfg["ack_wait"] == 30_000_000_000
    assert cfg["max_ack_pending"] == 1000
    assert cfg["max_waiting"] == 512
    assert cfg["max_deliver"] == -1
    assert cfg["deliver_policy"] == "all" and cfg["replay_policy"] == "instant"
    assert "inactive_threshold" not in cfg
    assert r["num_pending"] == 10
    assert r["delivered"] == {"consumer_seq": 0, "stream_seq": 0}
    assert r["ack_floor"] == {"consumer_seq": 0, "stream_seq": 0}

    r = await api(nc, "CONSUMER.CREATE.S", {"stream_name": "S", "config": {}})
    assert len(r["name"]) == 8
    assert r["config"]["ack_policy"] == "none"
    assert r["config"]["inactive_threshold"] == 5_000_000_000
    assert "ack_wait" not in r["config"] and "max_ack_pending" not in r["config"]

    r = await api(nc, "CONSUMER.CREATE.S.E", {"stream_name": "S", "config": {}})
    assert r["name"] == "E" and "durable_name" not in r["config"]

    r = await api(nc, "CONSUMER.CREATE.S.B", {"stream_name": "S", "config": {"durable_name": "B", "ack_policy": "explicit", "backoff": [1_000_000_000, 2_000_000_000], "max_deliver": 3}})
    assert r["config"]["ack_wait"] == 1_000_000_000


async def test_create_errors(nc: NATS, js: JetStreamContext) -> None:
    await seed(js)
    base = {"durable_name": "C", "ack_policy": "explicit"}
    assert err_code(await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": base})) is None
    # action create with another config, update of a missing consumer
    r = await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {**base, "max_deliver": 3}, "action": "create"})
    assert err_code(r) == 10148
    r = await api(nc, "CONSUMER.CREATE.S.D", {"stream_name": "S", "config": {"durable_name": "D"}, "action": "update"})
    assert err_code(r) == 10149
    # same config with action create is fine
    r = await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": base, "action": "create"})
    assert err_code(r) is None
    # filter in the subject must match the config
    r = await api(nc, "CONSUMER.CREATE.S.F.s.1", {"stream_name": "S", "config": {"name": "F", "filter_subject": "s.2"}})
    assert err_code(r) == 10131
    r = await api(nc, "CONSUMER.CREATE.S.F.s.1", {"stream_name": "S", "config": {"name": "F", "filter_subject": "s.1"}})
    assert r["config"]["filter_subject"] == "s.1" and r["num_pending"] == 3
    # legacy ephemeral with a durable name; durable create without/with another name
    assert err_code(await api(nc, "CONSUMER.CREATE.S", {"stream_name": "S", "config": {"durable_name": "X"}})) == 10020
    assert err_code(await api(nc, "CONSUMER.DURABLE.CREATE.S.Q", {"stream_name": "S", "config": {}})) == 10018
    assert err_code(await api(nc, "CONSUMER.DURABLE.CREATE.S.Q", {"stream_name": "S", "config": {"durable_name": "X"}})) == 10017
    r = await api(nc, "CONSUMER.DURABLE.CREATE.S.Q", {"stream_name": "S", "config": {"durable_name": "Q"}})
    assert r["name"] == "Q"
    # stream name mismatch, unknown stream
    assert err_code(await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "T", "config": base})) == 10056
    assert err_code(await api(nc, "CONSUMER.CREATE.T.C", {"stream_name": "T", "config": base})) == 10059
    # policy errors
    cases = [
        ({"durable_name": "Z", "deliver_policy": "by_start_sequence"}, 10094),
        ({"durable_name": "Z", "opt_start_seq": 3}, 10094),
        ({"durable_name": "Z", "flow_control": True, "deliver_subject": "dz"}, 10108),
        ({"durable_name": "Z", "filter_subject": "s.1", "filter_subjects": ["s.2"]}, 10136),
        ({"durable_name": "Z", "deliver_subject": "dz", "max_waiting": 5}, 10080),
        ({"durable_name": "Z", "idle_heartbeat": 1_000_000_000}, 10088),
        ({"durable_name": "Z", "filter_subjects": ["s.>", "s.1"]}, 10138),
        ({"durable_name": "Z", "ack_policy": "explicit", "backoff": [1_000_000_000, 2_000_000_000], "max_deliver": 1}, 10116),
    ]
    for cfg, code in cases:
        r = await api(nc, "CONSUMER.CREATE.S.Z", {"stream_name": "S", "config": cfg})
        assert err_code(r) == code, (cfg, r)
    r = await api(nc, "CONSUMER.CREATE.S.Z", {"stream_name": "S", "config": {"durable_name": "Z", "deliver_policy": "bogus"}})
    assert err_code(r) == 10025
    # updates that are not allowed
    r = await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {**base, "ack_policy": "all"}})
    assert err_code(r) == 10012 and "ack policy" in r["error"]["description"]
    r = await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {**base, "max_deliver": 5}})
    assert err_code(r) is None and r["config"]["max_deliver"] == 5


async def test_workqueue_consumers_may_not_overlap(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="W", subjects=["w.>"], retention="workqueue")
    ok = await api(nc, "CONSUMER.CREATE.W.A", {"stream_name": "W", "config": {"durable_name": "A", "ack_policy": "explicit"}})
    assert err_code(ok) is None
    r = await api(nc, "CONSUMER.CREATE.W.B", {"stream_name": "W", "config": {"durable_name": "B", "ack_policy": "explicit"}})
    assert err_code(r) == 10099
    r = await api(nc, "CONSUMER.CREATE.W.B", {"stream_name": "W", "config": {"durable_name": "B", "ack_policy": "explicit", "filter_subject": "w.1"}})
    assert err_code(r) == 10100
    await api(nc, "CONSUMER.DELETE.W.A")
    for name, filt in (("C", "w.1"), ("D", "w.0")):
        r = await api(nc, f"CONSUMER.CREATE.W.{name}", {"stream_name": "W", "config": {"durable_name": name, "ack_policy": "explicit", "filter_subject": filt}})
        assert err_code(r) is None
    r = await api(nc, "CONSUMER.CREATE.W.E", {"stream_name": "W", "config": {"durable_name": "E", "ack_policy": "explicit", "filter_subject": "w.>"}})
    assert err_code(r) == 10100


async def test_info_names_list_delete(nc: NATS, js: JetStreamContext) -> None:
    await seed(js)
    for name in ("A", "B", "C"):
        await api(nc, f"CONSUMER.CREATE.S.{name}", {"stream_name": "S", "config": {"durable_name": name}})
    r = await api(nc, "CONSUMER.NAMES.S")
    assert r["consumers"] == ["A", "B", "C"] and r["total"] == 3 and r["limit"] == 1024
    r = await api(nc, "CONSUMER.LIST.S", {"offset": 1})
    assert r["total"] == 3 and r["offset"] == 1 and r["limit"] == 256
    assert [c["name"] for c in r["consumers"]] == ["B", "C"]
    r = await api(nc, "CONSUMER.INFO.S.B")
    assert r["type"] == "io.nats.jetstream.api.v1.consumer_info_response" and r["num_pending"] == 10
    assert err_code(await api(nc, "CONSUMER.INFO.S.NOPE")) == 10014
    assert err_code(await api(nc, "CONSUMER.INFO.NOPE.B")) == 10059
    assert (await api(nc, "CONSUMER.DELETE.S.B")) == {"type": "io.nats.jetstream.api.v1.consumer_delete_response", "success": True}
    assert err_code(await api(nc, "CONSUMER.DELETE.S.B")) == 10014
    assert (await api(nc, "CONSUMER.NAMES.S"))["consumers"] == ["A", "C"]
    info = await js.stream_info("S")
    assert info.state.consumer_count == 2


async def test_pause_and_resume(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3)
    await api(nc, "CONSUMER.CREATE.S.P", {"stream_name": "S", "config": {"durable_name": "P", "ack_policy": "explicit"}})
    r = await api(nc, "CONSUMER.PAUSE.S.P", {"pause_until": "2099-01-01T00:00:00Z"})
    assert r["paused"] is True and r["pause_until"] == "2099-01-01T00:00:00Z" and r["pause_remaining"] > 0
    info = await api(nc, "CONSUMER.INFO.S.P")
    assert info["paused"] is True
    sub = await js.pull_subscribe_bind("P", "S")
    with pytest.raises(nats.errors.TimeoutError):
        await sub.fetch(1, timeout=0.3)
    r = await api(nc, "CONSUMER.PAUSE.S.P")
    assert r == {"type": "io.nats.jetstream.api.v1.consumer_pause_response", "paused": False, "pause_until": "0001-01-01T00:00:00Z"}
    msgs = await sub.fetch(1, timeout=2)
    assert msgs[0].metadata.sequence.stream == 1


def short(info: dict[str, Any]) -> dict[str, Any]:
    return {
        "delivered": {k: info["delivered"][k] for k in ("consumer_seq", "stream_seq")},
        "ack_floor": {k: info["ack_floor"][k] for k in ("consumer_seq", "stream_seq")},
        "num_pending": info["num_pending"],
        "num_ack_pending": info["num_ack_pending"],
    }


async def test_reset(nc: NATS, js: JetStreamContext) -> None:
    await seed(js)
    await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {"durable_name": "C", "ack_policy": "explicit"}})
    sub = await js.pull_subscribe_bind("C", "S")
    msgs = await sub.fetch(7)
    for m in msgs[:6]:
        await m.ack_sync()
    # empty body: delivery state reset, ack floor kept
    r = await api(nc, "CONSUMER.RESET.S.C")
    assert r["type"] == "io.nats.jetstream.api.v1.consumer_reset_response"
    assert r["reset_seq"] == 7
    assert short(r) == {"delivered": {"consumer_seq": 0, "stream_seq": 6}, "ack_floor": {"consumer_seq": 0, "stream_seq": 6}, "num_pending": 4, "num_ack_pending": 0}
    # seq N: ack floor N-1, also backwards
    r = await api(nc, "CONSUMER.RESET.S.C", {"seq": 3})
    assert r["reset_seq"] == 3
    assert short(r) == {"delivered": {"consumer_seq": 0, "stream_seq": 2}, "ack_floor": {"consumer_seq": 0, "stream_seq": 2}, "num_pending": 8, "num_ack_pending": 0}
    msgs = await sub.fetch(2)
    assert [(m.metadata.sequence.stream, m.metadata.sequence.consumer) for m in msgs] == [(3, 1), (4, 2)]
    assert msgs[0].metadata.num_pending == 7
    # beyond the end is allowed
    r = await api(nc, "CONSUMER.RESET.S.C", {"seq": 100})
    assert r["reset_seq"] == 100 and r["num_pending"] == 0 and r["ack_floor"]["stream_seq"] == 99
    # {"seq": 0} is the empty reset
    r = await api(nc, "CONSUMER.RESET.S.C", {"seq": 0})
    assert r["reset_seq"] == 100
    # bad bodies
    r = await api(nc, "CONSUMER.RESET.S.C", {"seq": -1})
    assert err_code(r) == 10025 and r["reset_seq"] == 0
    r = await api(nc, "CONSUMER.RESET.S.C", raw=b"{bad")
    assert err_code(r) == 10025
    # policies
    await api(nc, "CONSUMER.CREATE.S.L", {"stream_name": "S", "config": {"durable_name": "L", "deliver_policy": "last"}})
    r = await api(nc, "CONSUMER.RESET.S.L", {"seq": 3})
    assert err_code(r) == 10204 and r["error"]["description"] == "invalid reset: not allowed"
    r = await api(nc, "CONSUMER.RESET.S.L")
    assert r["reset_seq"] == 10
    await api(nc, "CONSUMER.CREATE.S.B", {"stream_name": "S", "config": {"durable_name": "B", "deliver_policy": "by_start_sequence", "opt_start_seq": 5, "ack_policy": "explicit"}})
    r = await api(nc, "CONSUMER.RESET.S.B", {"seq": 2})
    assert err_code(r) == 10204 and r["error"]["description"] == "invalid reset: below start seq"
    r = await api(nc, "CONSUMER.RESET.S.B")
    assert r["reset_seq"] == 5
    # filtered consumer: num_pending counts its subjects only
    await api(nc, "CONSUMER.CREATE.S.F", {"stream_name": "S", "config": {"durable_name": "F", "filter_subject": "s.1", "ack_policy": "explicit"}})
    r = await api(nc, "CONSUMER.RESET.S.F", {"seq": 3})
    assert r["reset_seq"] == 3 and r["num_pending"] == 2


async def test_reset_workqueue_keeps_messages(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 10, stream="W", retention="workqueue")
    await api(nc, "CONSUMER.CREATE.W.A", {"stream_name": "W", "config": {"durable_name": "A", "ack_policy": "explicit"}})
    r = await api(nc, "CONSUMER.RESET.W.A", {"seq": 5})
    assert r["reset_seq"] == 5 and r["num_pending"] == 6
    info = await js.stream_info("W")
    assert info.state.messages == 10


async def test_inactive_threshold_removes_idle_consumers(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 1)
    await api(nc, "CONSUMER.CREATE.S.EPH", {"stream_name": "S", "config": {"name": "EPH", "inactive_threshold": 500_000_000}})
    await api(nc, "CONSUMER.CREATE.S.DUR", {"stream_name": "S", "config": {"durable_name": "DUR", "inactive_threshold": 500_000_000}})
    await api(nc, "CONSUMER.CREATE.S.KEEP", {"stream_name": "S", "config": {"durable_name": "KEEP"}})
    sub = await nc.subscribe("push.in")
    await api(nc, "CONSUMER.CREATE.S.PUSH", {"stream_name": "S", "config": {"name": "PUSH", "deliver_subject": "push.in", "inactive_threshold": 500_000_000}})
    await sub.next_msg(timeout=2)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while loop.time() < deadline:
        names = (await api(nc, "CONSUMER.NAMES.S"))["consumers"]
        if names == ["KEEP", "PUSH"]:
            break
        await asyncio.sleep(0.1)
    assert names == ["KEEP", "PUSH"]  # the push consumer has interest: it stays
    await sub.unsubscribe()
    deadline = loop.time() + 5
    while loop.time() < deadline:
        names = (await api(nc, "CONSUMER.NAMES.S"))["consumers"]
        if names == ["KEEP"]:
            break
        await asyncio.sleep(0.1)
    assert names == ["KEEP"]


async def test_start_time_at_the_epoch_is_a_time(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 3)
    r = await api(nc, "CONSUMER.CREATE.S.T", {"stream_name": "S", "config": {"name": "T", "deliver_policy": "by_start_time", "opt_start_time": "1970-01-01T00:00:00Z"}})
    assert err_code(r) is None and r["num_pending"] == 3
    assert r["config"]["opt_start_time"] == "1970-01-01T00:00:00Z"


async def test_reset_on_interest_stream_acknowledges_what_it_passes(nc: NATS, js: JetStreamContext) -> None:
    await js.add_stream(name="I", subjects=["i.>"], retention="interest")
    await api(nc, "CONSUMER.CREATE.I.A", {"stream_name": "I", "config": {"durable_name": "A", "ack_policy": "explicit"}})
    await api(nc, "CONSUMER.CREATE.I.B", {"stream_name": "I", "config": {"durable_name": "B", "ack_policy": "explicit", "filter_subject": "i.b"}})
    for i in range(10):
        await js.publish("i.a" if i % 2 else "i.b", b"x")
    await api(nc, "CONSUMER.RESET.I.A", {"seq": 7})
    state = (await js.stream_info("I")).state
    assert (state.messages, state.first_seq) == (7, 1)  # B still wants 1, 3, 5
    await api(nc, "CONSUMER.RESET.I.B", {"seq": 5})
    state = (await js.stream_info("I")).state
    assert (state.messages, state.first_seq) == (5, 5)
    r = await api(nc, "CONSUMER.RESET.I.A", {"seq": 2})
    assert r["num_pending"] == 5


@pytest.mark.parametrize("target,left", [(10, 1), (11, 0), (12, 10)])
async def test_reset_on_interest_stream_up_to_the_end_only(nc: NATS, js: JetStreamContext, target: int, left: int) -> None:
    await js.add_stream(name="I", subjects=["i.>"], retention="interest")
    await api(nc, "CONSUMER.CREATE.I.A", {"stream_name": "I", "config": {"durable_name": "A", "ack_policy": "explicit"}})
    for _ in range(10):
        await js.publish("i.a", b"x")
    r = await api(nc, "CONSUMER.RESET.I.A", {"seq": target})
    assert r["reset_seq"] == target
    assert (await js.stream_info("I")).state.messages == left


async def test_more_create_edge_cases(nc: NATS, js: JetStreamContext) -> None:
    await seed(js, 1)
    r = await api(nc, "CONSUMER.CREATE.S.X.s.1", {"stream_name": "S", "config": {"filter_subjects": ["s.1"]}})
    assert err_code(r) == 10137
    r = await api(nc, "CONSUMER.CREATE.S.a*b", {"stream_name": "S", "config": {}})
    assert err_code(r) == 10052
    r = await api(nc, "CONSUMER.CREATE.S.Z", {"stream_name": "S", "config": {"durable_name": "Z", "filter_subject": "s..x"}})
    assert err_code(r) == 10052 and r["error"]["description"] == "invalid subject"
    r = await api(nc, "CONSUMER.CREATE.S.Z", {"stream_name": "S", "config": {"durable_name": "Z", "max_deliver": -5}})
    assert r["config"]["max_deliver"] == -1
    r = await api(nc, "CONSUMER.CREATE.S.X", {"stream_name": "S", "config": {"name": "Y"}})
    assert r["name"] == "X"
    r = await api(nc, "CONSUMER.CREATE.S.W")
    assert err_code(r) == 10056
