"""Stream API conformance: the bundled server must answer as the real nats-server.

Every test runs against both servers (the `nc`/`js` fixtures); the expected
values below were recorded from nats-server 2.15.1.
"""

from __future__ import annotations

import base64

import pytest
from js_helpers import api, create, err, info, pub
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

pytestmark = pytest.mark.asyncio

T = "io.nats.jetstream.api.v1."


async def test_account_info_shape(nc: NATS) -> None:
    resp = await api(nc, "INFO")
    assert resp["type"] == T + "account_info_response"
    assert resp["memory"] == 0 and resp["storage"] == 0 and resp["streams"] == 0
    assert resp["limits"]["max_memory"] == -1 and resp["limits"]["max_storage"] == -1
    assert isinstance(resp["api"]["level"], int) and "total" in resp["api"]
    await create(nc, storage="memory")
    await pub(nc, "s.a", b"hello")
    resp = await api(nc, "INFO")
    assert resp["streams"] == 1 and resp["memory"] > 0 and resp["storage"] == 0


async def test_create_defaults(nc: NATS) -> None:
    resp = await api(nc, "STREAM.CREATE.X", {"name": "X"})
    assert resp["type"] == T + "stream_create_response"
    cfg = resp["config"]
    expected = {
        "name": "X", "subjects": ["X"], "retention": "limits", "max_consumers": -1,
        "max_msgs": -1, "max_bytes": -1, "max_age": 0, "max_msgs_per_subject": -1,
        "max_msg_size": -1, "discard": "old", "storage": "file", "num_replicas": 1,
        "duplicate_window": 120_000_000_000, "compression": "none", "allow_direct": False,
        "mirror_direct": False, "sealed": False, "deny_delete": False, "deny_purge": False,
        "allow_rollup_hdrs": False, "consumer_limits": {}, "allow_msg_ttl": False,
    }
    assert {k: cfg[k] for k in expected} == expected
    assert cfg["metadata"]["_nats.req.level"] == "0"
    assert resp["state"] == {
        "messages": 0, "bytes": 0, "first_seq": 0, "first_ts": "0001-01-01T00:00:00Z",
        "last_seq": 0, "last_ts": "0001-01-01T00:00:00Z", "consumer_count": 0,
    }
    assert resp["did_create"] is True
    assert resp["created"].endswith("Z") and "T" in resp["created"]
    # max_age smaller than 2 min becomes the duplicate window
    resp = await create(nc, name="W", subjects=["w"], max_age=10_000_000_000)
    assert resp["config"]["duplicate_window"] == 10_000_000_000


async def test_create_idempotent_and_conflicts(nc: NATS) -> None:
    first = await create(nc)
    again = await create(nc)
    assert again["created"] == first["created"]
    resp = await api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>", "x"]})
    assert err(resp) == (400, 10058, "stream name already in use with a different configuration")
    resp = await api(nc, "STREAM.CREATE.T", {"name": "T", "subjects": ["s.a"]})
    assert err(resp) == (400, 10065, "subjects overlap with an existing stream")
    resp = await api(nc, "STREAM.CREATE.T", {"name": "U", "subjects": ["u"]})
    assert err(resp) == (400, 10056, "stream name in subject does not match request")
    resp = await api(nc, "STREAM.CREATE.V")
    assert err(resp)[1] == 10056
    resp = await api(nc, "STREAM.CREATE.V", b"{nope")
    assert err(resp)[:2] == (400, 10025) and err(resp)[2].startswith("invalid JSON: ")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a*b", (500, 10052, "stream name is required and can not contain '.', '*', '>', '\\', '/'")),
        ("a>b", (500, 10052, "stream name is required and can not contain '.', '*', '>', '\\', '/'")),
        ("a/b", (400, 10128, "Stream name can not contain path separators")),
        ("a\\b", (400, 10128, "Stream name can not contain path separators")),
    ],
)
async def test_bad_stream_names(nc: NATS, name: str, expected: tuple[int, int, str]) -> None:
    resp = await api(nc, f"STREAM.CREATE.{name}", {"name": name})
    assert err(resp) == expected


async def test_invalid_configs(nc: NATS) -> None:
    cases = [
        ({"name": "Z", "sealed": True}, "stream configuration for create can not be sealed"),
        ({"name": "Z", "max_age": 1_000_000_000, "duplicate_window": 5_000_000_000},
         "duplicates window can not be larger then max age"),
        ({"name": "Z", "subjects": ["a..b"]}, "invalid subject"),
        ({"name": "Z", "subjects": [">"]}, "capturing all subjects requires no-ack to be true"),
        ({"name": "Z", "subjects": ["z"], "discard_new_per_subject": True},
         "discard new per subject requires discard new policy to be set"),
    ]
    for body, description in cases:
        resp = await api(nc, "STREAM.CREATE.Z", body)
        assert err(resp) == (500, 10052, description), body


async def test_info_subjects_filter_and_deleted_details(nc: NATS) -> None:
    await create(nc)
    for subject in ("s.a", "s.a", "s.b", "s.c.d"):
        await pub(nc, subject)
    resp = await info(nc)
    assert resp["type"] == T + "stream_info_response"
    st = resp["state"]
    assert st["messages"] == 4 and st["first_seq"] == 1 and st["last_seq"] == 4
    assert st["num_subjects"] == 3 and "subjects" not in st
    resp = await info(nc, subjects_filter="s.*")
    assert resp["state"]["subjects"] == {"s.a": 2, "s.b": 1}
    assert (resp["total"], resp["offset"], resp["limit"]) == (2, 0, 100000)
    resp = await info(nc, subjects_filter=">")
    assert resp["state"]["subjects"] == {"s.a": 2, "s.b": 1, "s.c.d": 1}
    await api(nc, "STREAM.MSG.DELETE.S", {"seq": 2})
    resp = await info(nc, deleted_details=True)
    assert resp["state"]["num_deleted"] == 1 and resp["state"]["deleted"] == [2]
    resp = await info(nc, name="NOPE")
    assert err(resp) == (404, 10059, "stream not found")
    assert (resp["total"], resp["offset"], resp["limit"]) == (0, 0, 0)


async def test_info_subjects_pages_as_nats_server(nc: NATS) -> None:
    await create(nc)
    for subject in ("s.c", "s.a", "s.b", "s.a", "s.d"):
        await pub(nc, subject)
    raw = await nc.request("$JS.API.STREAM.INFO.S", b'{"subjects_filter":">"}', timeout=5)
    # in subject order, as nats-server writes a map
    assert b'"subjects":{"s.a":2,"s.b":1,"s.c":1,"s.d":1}' in raw.data
    resp = await info(nc, subjects_filter=">", offset=1)
    assert resp["state"]["subjects"] == {"s.b": 1, "s.c": 1, "s.d": 1}
    assert (resp["total"], resp["offset"], resp["limit"]) == (4, 1, 100000)
    resp = await info(nc, subjects_filter=">", offset=9)  # past the end: no subjects
    assert "subjects" not in resp["state"]
    assert (resp["total"], resp["offset"], resp["limit"]) == (4, 9, 100000)
    resp = await info(nc, subjects_filter="x.>", offset=2)  # nothing matches: no paging
    assert "subjects" not in resp["state"]
    assert (resp["total"], resp["offset"], resp["limit"]) == (0, 0, 0)
    resp = await info(nc, subjects_filter=">", offset=-3)
    assert (resp["total"], resp["offset"], len(resp["state"]["subjects"])) == (4, 0, 4)


async def test_names_and_list_paging(nc: NATS) -> None:
    for i in range(5):
        await create(nc, name=f"N{i}", subjects=[f"n{i}.>"])
    resp = await api(nc, "STREAM.NAMES")
    assert resp["type"] == T + "stream_names_response"
    assert (resp["total"], resp["offset"], resp["limit"]) == (5, 0, 1024)
    assert sorted(resp["streams"]) == [f"N{i}" for i in range(5)]
    resp = await api(nc, "STREAM.NAMES", {"offset": 3})
    assert resp["offset"] == 3 and len(resp["streams"]) == 2
    resp = await api(nc, "STREAM.NAMES", {"subject": "n2.x"})
    assert resp["streams"] == ["N2"] and resp["total"] == 1
    resp = await api(nc, "STREAM.NAMES", {"subject": "nothing"})
    assert resp["total"] == 0 and resp["streams"] is None
    resp = await api(nc, "STREAM.LIST")
    assert resp["type"] == T + "stream_list_response"
    assert (resp["total"], resp["offset"], resp["limit"]) == (5, 0, 256)
    assert sorted(s["config"]["name"] for s in resp["streams"]) == [f"N{i}" for i in range(5)]
    assert all("state" in s and "created" in s for s in resp["streams"])
    resp = await api(nc, "STREAM.LIST", {"offset": 4})
    assert len(resp["streams"]) == 1
    resp = await api(nc, "STREAM.NAMES", b"[1")
    assert err(resp)[1] == 10025 and resp["streams"] is None


async def test_update(nc: NATS) -> None:
    await create(nc, max_msgs=10)
    for _ in range(5):
        await pub(nc, "s.a")
    resp = await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>", "t"], "max_msgs": 2})
    assert resp["type"] == T + "stream_update_response"
    assert resp["config"]["subjects"] == ["s.>", "t"] and resp["state"]["messages"] == 2
    assert (await pub(nc, "t"))["seq"] == 6
    resp = await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"], "storage": "memory"})
    assert err(resp) == (500, 10052, "stream configuration update can not change storage type")
    resp = await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"], "retention": "workqueue"})
    assert err(resp) == (
        500, 10052, "stream configuration update can not change retention policy to/from workqueue"
    )
    await create(nc, name="O", subjects=["o"])
    resp = await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>", "o"]})
    assert err(resp) == (400, 10065, "subjects overlap with an existing stream")
    resp = await api(nc, "STREAM.UPDATE.Q", {"name": "Q"})
    assert err(resp) == (404, 10059, "stream not found")
    await create(nc, name="T", subjects=["tt"], allow_msg_ttl=True)
    resp = await api(nc, "STREAM.UPDATE.T", {"name": "T", "subjects": ["tt"]})
    assert err(resp) == (500, 10052, "message TTL status can not be disabled")
    resp = await api(nc, "STREAM.UPDATE.T", {"name": "T", "subjects": ["tt"], "allow_msg_ttl": True, "first_seq": 5})
    assert resp["config"]["first_seq"] == 5
    await pub(nc, "o")
    resp = await api(nc, "STREAM.UPDATE.O", {"name": "O", "subjects": ["o"], "retention": "interest"})
    assert resp["config"]["retention"] == "interest" and resp["state"]["messages"] == 0


async def test_delete(nc: NATS) -> None:
    await create(nc)
    resp = await api(nc, "STREAM.DELETE.S")
    assert resp == {"type": T + "stream_delete_response", "success": True}
    resp = await api(nc, "STREAM.DELETE.S")
    assert err(resp) == (404, 10059, "stream not found")
    # after delete the subjects are free again and publishing there has no responders
    await create(nc, name="S2", subjects=["s.>"])


async def test_purge_variants(nc: NATS) -> None:
    await create(nc)
    for subject in ("s.a", "s.b", "s.a", "s.b", "s.a", "s.c"):
        await pub(nc, subject)
    resp = await api(nc, "STREAM.PURGE.S", {"filter": "s.a", "keep": 1})
    assert resp == {"type": T + "stream_purge_response", "success": True, "purged": 2}
    resp = await api(nc, "STREAM.PURGE.S", {"seq": 4})
    assert resp["purged"] == 1  # below 4 only seq 2 is left (1 and 3 went with the filter)
    st = (await info(nc))["state"]
    assert st["first_seq"] == 4
    resp = await api(nc, "STREAM.PURGE.S", {"filter": "s.b"})
    assert resp["purged"] == 1
    resp = await api(nc, "STREAM.PURGE.S", {"seq": 2, "keep": 1})
    assert err(resp) == (400, 10003, "bad request") and resp["purged"] == 0
    resp = await api(nc, "STREAM.PURGE.S")
    assert resp["purged"] == 2
    st = (await info(nc))["state"]
    assert st["messages"] == 0 and st["first_seq"] == 7 and st["last_seq"] == 6


async def test_msg_get(nc: NATS) -> None:
    await create(nc)
    await pub(nc, "s.a", b"one", {"Nats-Msg-Id": "m1"})
    await pub(nc, "s.b", b"two")
    await pub(nc, "s.a", b"three")
    resp = await api(nc, "STREAM.MSG.GET.S", {"seq": 1})
    assert resp["type"] == T + "stream_msg_get_response"
    msg = resp["message"]
    assert msg["subject"] == "s.a" and msg["seq"] == 1
    assert base64.b64decode(msg["data"]) == b"one"
    assert base64.b64decode(msg["hdrs"]) == b"NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n"
    assert msg["time"].endswith("Z")
    resp = await api(nc, "STREAM.MSG.GET.S", {"last_by_subj": "s.*"})
    assert resp["message"]["seq"] == 3 and "hdrs" not in resp["message"]
    resp = await api(nc, "STREAM.MSG.GET.S", {"last_by_subj": "s.b"})
    assert resp["message"]["seq"] == 2
    resp = await api(nc, "STREAM.MSG.GET.S", {"next_by_subj": "s.a", "seq": 2})
    assert resp["message"]["seq"] == 3
    resp = await api(nc, "STREAM.MSG.GET.S", {"seq": 99})
    assert err(resp) == (404, 10037, "no message found")
    resp = await api(nc, "STREAM.MSG.GET.S", {"last_by_subj": "nope"})
    assert err(resp) == (404, 10037, "no message found")
    assert err(await api(nc, "STREAM.MSG.GET.S", {})) == (400, 10003, "bad request")
    both = {"seq": 1, "last_by_subj": "s.a"}
    assert err(await api(nc, "STREAM.MSG.GET.S", both)) == (400, 10003, "bad request")


async def test_msg_delete(nc: NATS) -> None:
    await create(nc)
    for _ in range(3):
        await pub(nc, "s.a")
    resp = await api(nc, "STREAM.MSG.DELETE.S", {"seq": 2})
    assert resp == {"type": T + "stream_msg_delete_response", "success": True}
    resp = await api(nc, "STREAM.MSG.DELETE.S", {"seq": 3, "no_erase": True})
    assert resp["success"] is True
    resp = await api(nc, "STREAM.MSG.DELETE.S", {"seq": 2})
    assert err(resp) == (400, 10043, "sequence 2 not found")
    resp = await api(nc, "STREAM.MSG.DELETE.S", {"seq": 9})
    assert err(resp) == (500, 10057, "stream store EOF")
    await api(nc, "STREAM.MSG.DELETE.S", {"seq": 1})
    resp = await api(nc, "STREAM.MSG.DELETE.S", {"seq": 1})
    assert err(resp) == (500, 10057, "no message found")
    assert err(await api(nc, "STREAM.MSG.DELETE.S", {})) == (400, 10003, "bad request")
    st = (await info(nc))["state"]
    assert st["messages"] == 0 and st["last_seq"] == 3


async def test_deny_delete_purge_and_sealed(nc: NATS) -> None:
    await create(nc, name="N", subjects=["n"], deny_delete=True, deny_purge=True)
    await pub(nc, "n")
    resp = await api(nc, "STREAM.MSG.DELETE.N", {"seq": 1})
    assert err(resp) == (500, 10057, "message delete not permitted")
    resp = await api(nc, "STREAM.PURGE.N")
    assert err(resp) == (500, 10110, "stream purge not permitted")
    resp = await api(nc, "STREAM.UPDATE.N", {"name": "N", "subjects": ["n"]})
    assert err(resp) == (500, 10052, "stream configuration update can not cancel deny message deletes")
    sealed = {"name": "N", "subjects": ["n"], "deny_delete": True, "deny_purge": True, "sealed": True}
    resp = await api(nc, "STREAM.UPDATE.N", sealed)
    assert resp["config"]["sealed"] is True and resp["config"]["discard"] == "new"
    resp = await pub(nc, "n")
    assert resp == {
        "error": {"code": 400, "err_code": 10109, "description": "invalid operation on sealed stream"},
        "stream": "N", "seq": 0,
    }
    resp = await api(nc, "STREAM.PURGE.N")
    assert err(resp) == (400, 10109, "invalid operation on sealed stream")


async def test_nats_py_stream_management(js: JetStreamContext) -> None:
    """nats-py's own wrappers parse what the server answers."""
    si = await js.add_stream(name="PY", subjects=["py.>"], max_msgs=100)
    assert si.config.name == "PY" and si.config.max_msgs == 100
    ack = await js.publish("py.a", b"hello")
    assert ack.stream == "PY" and ack.seq == 1
    si = await js.stream_info("PY")
    assert si.state.messages == 1
    assert [s.config.name for s in await js.streams_info()] == ["PY"]
    msg = await js.get_msg("PY", seq=1)
    assert msg.data == b"hello" and msg.subject == "py.a"
    assert await js.find_stream_name_by_subject("py.x") == "PY"
    await js.purge_stream("PY")
    assert (await js.stream_info("PY")).state.messages == 0
    assert await js.delete_stream("PY")


async def test_mirror_direct_needs_a_mirror(nc: NATS) -> None:
    """nats.py's KVTest.test_kv_direct checks it (issue 24)."""
    resp = await api(nc, "STREAM.CREATE.MD", {"name": "MD", "mirror_direct": True})
    assert err(resp) == (500, 10052, "stream has no mirror but does have mirror direct")
