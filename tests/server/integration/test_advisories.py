"""JetStream advisories (`$JS.EVENT.ADVISORY.>`) on both servers via nats-py: the same
calls, the same subjects, the same fields.

One scenario per server: stream create / update, consumer create, NAK, TERM with
a reason, a message past `max_deliver`, consumer delete, stream delete, and
the API audit of every request. Waits are bounded (a deadline on the events
expected).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import pytest
from js_helpers import api
from nats.aio.msg import Msg
from waits import until

from jetstream_testing.process import ServerProcess

EVENT = "$JS.EVENT.ADVISORY."
COMMON = {"type", "id", "timestamp"}
# a deleted stream's advisories, which nats-server may drop under load (test_advisories)
DROPPABLE = {EVENT + "STREAM.DELETED.S", EVENT + "CONSUMER.DELETED.S.P"}


async def _until(events: list[tuple[str, dict[str, Any]]], subjects: list[str], *, required: bool = True) -> None:
    """Wait (5 s at most) until every advisory of `subjects` was seen; fail when one was not,
    if it is `required`."""
    async def wait() -> None:
        while not all(any(s == subject for s, _ in events) for subject in subjects):
            await asyncio.sleep(0.02)
    try:
        await asyncio.wait_for(wait(), 5)
    except TimeoutError:
        if required:
            pytest.fail(f"advisories {subjects} not all seen: {[s for s, _ in events]}")


def _one(events: list[tuple[str, dict[str, Any]]], subject: str) -> dict[str, Any]:
    found = [body for s, body in events if s == subject]
    assert len(found) == 1, (subject, [s for s, _ in events])
    return found[0]


async def test_advisories(server: ServerProcess, server_kind: str) -> None:
    nc = await nats.connect(server.url, name="auditor", max_reconnect_attempts=0)
    events: list[tuple[str, dict[str, Any]]] = []

    async def record(msg: Msg) -> None:
        events.append((msg.subject, json.loads(msg.data)))

    try:
        await nc.subscribe(EVENT + ">", cb=record)
        await nc.flush()
        await api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        await api(nc, "STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"], "max_msgs": 10})
        await api(nc, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": {
            "durable_name": "C", "ack_policy": "explicit", "max_deliver": 2}})
        js = nc.jetstream()
        await js.publish("s.a", b"1")
        await js.publish("s.b", b"2")
        sub = await js.pull_subscribe_bind("C", "S")
        first, second = await sub.fetch(2, timeout=5)
        await first.nak()
        await nc.publish(second.reply or "", b"+TERM no longer wanted")
        (again,) = await sub.fetch(1, timeout=5)
        assert again.metadata.num_delivered == 2
        await again.nak()
        with pytest.raises(nats.errors.TimeoutError):
            await sub.fetch(1, timeout=0.5)  # the third delivery is over max_deliver
        await _until(events, [EVENT + "CONSUMER.MAX_DELIVERIES.S.C"])
        await api(nc, "CONSUMER.DELETE.S.C")
        await api(nc, "CONSUMER.CREATE.S.P", {"stream_name": "S", "config": {
            "durable_name": "P", "ack_policy": "explicit"}})
        paused = await api(nc, "CONSUMER.PAUSE.S.P", {"pause_until": "2030-01-01T00:00:00Z"})
        assert paused["paused"] is True
        await api(nc, "CONSUMER.PAUSE.S.P", {})
        await api(nc, "STREAM.DELETE.S")  # with P still on it
        missing = await api(nc, "STREAM.INFO.NOPE")
        assert missing["error"]["err_code"] == 10059
        await _until(events, [EVENT + "CONSUMER.DELETED.S.C"])
        # nats-server queues a deleted stream's advisories (its consumers', then its own) on
        # the stream's send queue and at once closes the loop that drains it (stream.go,
        # stop(): sendDeleteAdvisoryLocked, then close(mset.qch)); that loop's select may
        # take the close first, so under load nats-server drops them. The bundled server
        # sends them always.
        await _until(events, sorted(DROPPABLE), required=server_kind == "bundled")
        # the last audit follows its answer
        await until(lambda: any(s == EVENT + "API" and body["subject"] == "$JS.API.STREAM.INFO.NOPE"
                                for s, body in events), 5, "the audit of the last API request")
    finally:
        await nc.close()

    actions = {
        "STREAM.CREATED.S": ("stream_action", {"stream": "S", "action": "create"}),
        "STREAM.UPDATED.S": ("stream_action", {"stream": "S", "action": "modify"}),
        "STREAM.DELETED.S": ("stream_action", {"stream": "S", "action": "delete"}),
        "CONSUMER.CREATED.S.C": ("consumer_action",
                                 {"stream": "S", "consumer": "C", "action": "create"}),
        "CONSUMER.DELETED.S.C": ("consumer_action",
                                 {"stream": "S", "consumer": "C", "action": "delete"}),
        "CONSUMER.MSG_TERMINATED.S.C": ("terminated", {
            "stream": "S", "consumer": "C", "consumer_seq": 2, "stream_seq": 2, "deliveries": 1,
            "reason": "no longer wanted"}),
        "CONSUMER.MAX_DELIVERIES.S.C": ("max_deliver", {
            "stream": "S", "consumer": "C", "stream_seq": 1, "deliveries": 2}),
    }
    # what nats-server dropped (only DROPPABLE ones; the bundled server had to send them all)
    dropped = DROPPABLE - {s for s, _ in events}
    for suffix, (kind, fields) in actions.items():
        if EVENT + suffix in dropped:
            continue
        body = _one(events, EVENT + suffix)
        assert set(body) == COMMON | set(fields), (suffix, body)
        assert body["type"] == "io.nats.jetstream.advisory.v1." + kind
        assert {k: body[k] for k in fields} == fields, (suffix, body)
        assert len(body["id"]) == 22 and body["timestamp"].endswith("Z")
    naks = [body for s, body in events if s == EVENT + "CONSUMER.MSG_NAKED.S.C"]
    assert [(n["consumer_seq"], n["stream_seq"], n["deliveries"]) for n in naks] == [
        (1, 1, 1), (3, 1, 2)]
    assert all(set(n) == COMMON | {"stream", "consumer", "consumer_seq", "stream_seq",
                                   "deliveries"} for n in naks)

    # nats-server sends each answer's audit from the goroutine that answered: two
    # audits may arrive in either order (the bundled server sends them in order)
    audits = [body for s, body in events if s == EVENT + "API"]
    expected_audits = [
        "$JS.API.STREAM.CREATE.S", "$JS.API.STREAM.UPDATE.S", "$JS.API.CONSUMER.CREATE.S.C",
        "$JS.API.CONSUMER.DELETE.S.C", "$JS.API.CONSUMER.CREATE.S.P",
        "$JS.API.CONSUMER.PAUSE.S.P", "$JS.API.CONSUMER.PAUSE.S.P", "$JS.API.STREAM.DELETE.S",
        "$JS.API.STREAM.INFO.NOPE"]
    subjects = [a["subject"] for a in audits]
    assert sorted(subjects) == sorted(expected_audits), subjects
    if server_kind == "bundled":
        assert subjects == expected_audits

    def audit_of(subject: str) -> dict[str, Any]:
        return next(a for a in audits if a["subject"] == subject)

    for audit in audits:
        assert {"type", "id", "timestamp", "server", "client", "subject", "response"} <= set(audit)
        assert set(audit) <= {"type", "id", "timestamp", "server", "client", "subject",
                              "request", "response"}
        assert audit["type"] == "io.nats.jetstream.advisory.v1.api_audit"
        client = audit["client"]
        assert {k: client[k] for k in ("host", "acc", "name", "lang", "kind", "client_type")} \
            == {"host": "127.0.0.1", "acc": "$G", "name": "auditor", "lang": "python3",
                "kind": "Client", "client_type": "nats"}
        assert isinstance(client["id"], int) and client["ver"] and client["server"]
        assert json.loads(audit["response"])["type"].startswith("io.nats.jetstream.api.v1.")
    assert "request" not in audit_of("$JS.API.CONSUMER.DELETE.S.C")  # an empty request is left out
    if EVENT + "CONSUMER.DELETED.S.P" not in dropped:
        assert _one(events, EVENT + "CONSUMER.DELETED.S.P")["action"] == "delete"
    assert json.loads(audit_of("$JS.API.STREAM.CREATE.S")["request"]) == {
        "name": "S", "subjects": ["s.>"]}
    assert json.loads(audit_of("$JS.API.STREAM.INFO.NOPE")["response"])["error"]["err_code"] == 10059
    created = json.loads(audit_of("$JS.API.STREAM.CREATE.S")["response"])
    assert created["type"] == "io.nats.jetstream.api.v1.stream_create_response"
    assert created["config"]["name"] == "S"
    # nats-server sends the stream's advisory and the answer's audit from different
    # goroutines (either may come first); the bundled server sends the advisory first
    order = [s for s, _ in events]
    if server_kind == "bundled":
        assert order.index(EVENT + "STREAM.CREATED.S") < order.index(EVENT + "API")
    # a deleted stream's consumers are deleted first
    if not dropped:
        assert order.index(EVENT + "CONSUMER.DELETED.S.P") < order.index(EVENT + "STREAM.DELETED.S")
    pauses = [body for s, body in events if s == EVENT + "CONSUMER.PAUSE.S.P"]
    assert [{k: v for k, v in p.items() if k not in ("id", "timestamp")} for p in pauses] == [
        {"type": "io.nats.jetstream.advisory.v1.consumer_pause", "stream": "S", "consumer": "P",
         "paused": paused, "pause_until": until}
        for paused, until in ((True, "2030-01-01T00:00:00Z"), (False, "0001-01-01T00:00:00Z"))]


async def test_pinned_and_unpinned(server: ServerProcess) -> None:
    nc = await nats.connect(server.url, max_reconnect_attempts=0)
    events: list[tuple[str, dict[str, Any]]] = []

    async def record(msg: Msg) -> None:
        events.append((msg.subject, json.loads(msg.data)))

    try:
        for kind in ("PINNED", "UNPINNED"):
            await nc.subscribe(f"{EVENT}CONSUMER.{kind}.>", cb=record)
        await api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        created = await api(nc, "CONSUMER.CREATE.S.P", {"stream_name": "S", "config": {
            "durable_name": "P", "ack_policy": "explicit", "priority_groups": ["G"],
            "priority_policy": "pinned_client"}})
        assert "error" not in created, created
        await nc.request("s.a", b"x", timeout=5)
        inbox = nc.new_inbox()
        pulled = await nc.subscribe(inbox)  # deliveries keep their stream subject: no request()
        await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.P", json.dumps(
            {"batch": 1, "group": "G", "expires": 5 * 10**9}).encode(), reply=inbox)
        reply = await pulled.next_msg(timeout=5)
        pin_id = (reply.headers or {})["Nats-Pin-Id"]
        unpinned = await api(nc, "CONSUMER.UNPIN.S.P", {"group": "G"})
        assert "error" not in unpinned, unpinned
        await _until(events, [EVENT + "CONSUMER.PINNED.S.P", EVENT + "CONSUMER.UNPINNED.S.P"])
    finally:
        await nc.close()
    pinned = _one(events, EVENT + "CONSUMER.PINNED.S.P")
    unpin = _one(events, EVENT + "CONSUMER.UNPINNED.S.P")
    for body in (pinned, unpin):
        body.pop("id"), body.pop("timestamp")
    assert pinned == {"type": "io.nats.jetstream.advisory.v1.consumer_group_pinned",
                      "account": "$G", "stream": "S", "consumer": "P", "group": "G",
                      "pinned_id": pin_id}
    assert unpin == {"type": "io.nats.jetstream.advisory.v1.consumer_group_unpinned",
                     "account": "$G", "stream": "S", "consumer": "P", "group": "G",
                     "reason": "admin"}
