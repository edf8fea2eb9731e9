"""Counter streams (ADR-49, `allow_msg_counter`, ``Nats-Incr``) on both servers via nats-py."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from js_helpers import api as _api
from nats.aio.client import Client as NATS

from jetstream_testing.process import ServerProcess


@pytest.fixture
async def nc(server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await _api(client, "STREAM.CREATE.C", {"name": "C", "subjects": ["c.>"],
                                               "allow_msg_counter": True})
        await _api(client, "STREAM.CREATE.P", {"name": "P", "subjects": ["p.>"]})
        yield client
    finally:
        await client.close()



async def _pub(nc: NATS, subject: str, headers: dict[str, str] | None,
               payload: bytes = b"") -> dict[str, Any]:
    msg = await nc.request(subject, payload, headers=headers, timeout=5)
    return dict(json.loads(msg.data))


async def test_totals_per_subject(nc: NATS) -> None:
    big = "123456789012345678901234567890"
    answers = [await _pub(nc, subject, {"Nats-Incr": incr}) for subject, incr in (
        ("c.a", "1"), ("c.a", "+41"), ("c.b", "5"), ("c.a", "-100"), ("c.a", big))]
    assert answers == [
        {"stream": "C", "seq": 1, "val": "1"},
        {"stream": "C", "seq": 2, "val": "42"},
        {"stream": "C", "seq": 3, "val": "5"},
        {"stream": "C", "seq": 4, "val": "-58"},
        {"stream": "C", "seq": 5, "val": str(int(big) - 58)},
    ]
    last = (await _api(nc, "STREAM.MSG.GET.C", {"last_by_subj": "c.a"}))["message"]
    assert json.loads(base64.b64decode(last["data"])) == {"val": str(int(big) - 58)}
    assert base64.b64decode(last["hdrs"]) == b"NATS/1.0\r\nNats-Incr: " + big.encode() + b"\r\n\r\n"
    # a duplicate is recognised and changes nothing
    first = await _pub(nc, "c.b", {"Nats-Incr": "1", "Nats-Msg-Id": "once"})
    again = await _pub(nc, "c.b", {"Nats-Incr": "1", "Nats-Msg-Id": "once"})
    assert (first["val"], again.get("duplicate")) == ("6", True)


REFUSED = [
    ("c.a", None, b"", 10169),  # a counter stream needs the increment
    ("c.a", {"Other": "1"}, b"", 10169),
    ("c.a", {"Nats-Incr": "1"}, b"x", 10170),  # no payload with an increment
    ("c.a", {"Nats-Incr": "1.5"}, b"", 10171),
    ("c.a", {"Nats-Incr": "abc"}, b"", 10171),
    ("c.a", {"Nats-Incr": "1", "Nats-Rollup": "sub"}, b"", 10171),
    ("c.a", {"Nats-Incr": "1", "Nats-Expected-Last-Sequence": "0"}, b"", 10171),
    ("p.a", {"Nats-Incr": "1"}, b"", 10168),  # not a counter stream
    ("p.a", {"Nats-Incr": "x"}, b"", 10171),
]


async def test_refused_increments(nc: NATS) -> None:
    for subject, headers, payload, err_code in REFUSED:
        answer = await _pub(nc, subject, headers, payload)
        assert answer["error"]["err_code"] == err_code, (subject, headers, payload)
    assert (await _api(nc, "STREAM.INFO.C"))["state"]["messages"] == 0


@pytest.mark.parametrize(
    ("config", "description"),
    [
        ({"discard": "new"}, "counter stream cannot use discard new"),
        ({"allow_msg_ttl": True}, "counter stream cannot use message TTLs"),
        ({"allow_msg_schedules": True}, "counter stream cannot use message schedules"),
        ({"retention": "workqueue"}, "counter stream can only use limits retention"),
    ],
)
async def test_incompatible_config(nc: NATS, config: dict[str, Any], description: str) -> None:
    answer = await _api(nc, "STREAM.CREATE.X", {"name": "X", "subjects": ["x.>"],
                                                "allow_msg_counter": True, **config})
    assert answer["error"] == {"code": 500, "err_code": 10052, "description": description}


async def test_counter_setting_cannot_change(nc: NATS) -> None:
    changed = "stream configuration update can not change message counter setting"
    off = await _api(nc, "STREAM.UPDATE.C", {"name": "C", "subjects": ["c.>"]})
    on = await _api(nc, "STREAM.UPDATE.P", {"name": "P", "subjects": ["p.>"],
                                            "allow_msg_counter": True})
    assert off["error"]["description"] == on["error"]["description"] == changed
    info = await _api(nc, "STREAM.INFO.C")
    assert (info["config"]["allow_msg_counter"], info["config"]["metadata"]["_nats.req.level"]) == (
        True, "2")
    assert "allow_msg_counter" not in (await _api(nc, "STREAM.INFO.P"))["config"]
