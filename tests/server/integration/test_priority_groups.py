"""Consumer priority groups (ADR-42) on both servers, through nats-py with raw requests.

nats-py 2.16 has no priority-group API: consumers are created with the
`priority_*` config keys and pull requests are sent as JSON to
`$JS.API.CONSUMER.MSG.NEXT` with `group`, `min_pending`, `min_ack_pending`,
`id` and `priority`, exactly as the newer clients send them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from js_helpers import api as _api
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from raw_client import RawClient

from jetstream_testing.process import ServerProcess

NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.{}"
WAIT_NS = 30 * 10**9  # pull requests that must not end during a test


@pytest.fixture
async def nc(server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(server.url, max_reconnect_attempts=0)
    try:
        await _api(client, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        yield client
    finally:
        await client.close()



async def _consumer(nc: NATS, name: str, **config: Any) -> dict[str, Any]:
    return await _api(nc, f"CONSUMER.CREATE.S.{name}", {
        "stream_name": "S",
        "config": {"durable_name": name, "ack_policy": "explicit", **config}})


class Pull:
    """One pull request and what its reply subject receives."""

    def __init__(self, nc: NATS, consumer: str, **body: Any) -> None:
        self.nc, self.consumer, self.body = nc, consumer, {"batch": 1, **body}
        self.msgs: asyncio.Queue[Msg] = asyncio.Queue()

    async def send(self) -> Pull:
        inbox = self.nc.new_inbox()

        async def got(msg: Msg) -> None:
            await self.msgs.put(msg)

        await self.nc.subscribe(inbox, cb=got)
        await self.nc.publish(NEXT.format(self.consumer), json.dumps(self.body).encode(),
                              reply=inbox)
        await self.nc.flush()
        return self

    async def next(self) -> Msg:
        return await asyncio.wait_for(self.msgs.get(), 10)


def _status(msg: Msg) -> tuple[str, str]:
    headers = msg.headers or {}
    return headers.get("Status", ""), headers.get("Description", "")


async def _publish(nc: NATS, *subjects: str) -> None:
    for subject in subjects:
        await nc.request(subject, b"x", timeout=5)


@pytest.mark.parametrize(
    ("config", "err_code"),
    [
        ({"deliver_subject": "d", "priority_groups": ["A"], "priority_policy": "overflow"}, 10178),
        ({"priority_policy": "overflow"}, 10159),
        ({"priority_groups": [""], "priority_policy": "overflow"}, 10161),
        ({"priority_groups": ["A.B"], "priority_policy": "pinned_client"}, 10162),
        ({"priority_groups": ["A" * 17], "priority_policy": "prioritized"}, 10162),
        ({"priority_groups": ["A"]}, 10196),
        ({"priority_timeout": 10**9}, 10197),
        ({"priority_groups": ["A"], "priority_policy": "bogus"}, 10025),
        ({"priority_groups": "A", "priority_policy": "overflow"}, 10025),
    ],
)
async def test_config_errors(nc: NATS, config: dict[str, Any], err_code: int) -> None:
    answer = await _consumer(nc, "C", **config)
    assert answer["error"]["err_code"] == err_code
    assert (await _api(nc, "CONSUMER.NAMES.S"))["consumers"] in ([], None)


async def test_config_defaults_and_info(nc: NATS) -> None:
    pinned = await _consumer(nc, "P", priority_groups=["A"], priority_policy="pinned_client")
    assert pinned["config"]["priority_timeout"] == 120 * 10**9  # nats-server's default pin TTL
    assert pinned["priority_groups"] == [{"group": "A", "pinned_ts": "0001-01-01T00:00:00Z"}]
    await _consumer(nc, "O", priority_groups=["A", "B"], priority_policy="overflow")
    info = await _api(nc, "CONSUMER.INFO.S.O")
    assert (info["config"]["priority_groups"], info["config"]["priority_policy"]) == (
        ["A", "B"], "overflow")
    assert "priority_timeout" not in info["config"]
    assert info["priority_groups"] == [{"group": "A", "pinned_ts": "0001-01-01T00:00:00Z"}]


PULL_ERRORS = [
    ("N", {"min_pending": 2}, ("400", "Bad Request - Not a Overflow Priority consumer")),
    ("N", {"id": "x"}, ("400", "Bad Request - Not a Pinned Client Priority consumer")),
    ("N", {"priority": 10}, ("400", "Bad Request - Priority must be between 0 and 9")),
    ("O", {"no_wait": True}, ("400", "Bad Request - Priority Group missing")),
    ("O", {"group": "Z"}, ("400", "Bad Request - Invalid Priority Group")),
    ("O", {"group": "A", "min_pending": "x"}, (
        "400", "Bad Request - json: cannot unmarshal string into Go struct field "
               ".min_pending of type int64")),
    ("P", {"group": "A", "id": "old", "no_wait": True}, ("404", "No Messages")),
]


async def test_pull_request_errors(nc: NATS) -> None:
    await _consumer(nc, "N")
    await _consumer(nc, "O", priority_groups=["A"], priority_policy="overflow")
    await _consumer(nc, "P", priority_groups=["A"], priority_policy="pinned_client")
    for consumer, body, status in PULL_ERRORS:
        pull = await Pull(nc, consumer, **body).send()
        assert _status(await pull.next()) == status, (consumer, body)


async def test_overflow_serves_a_request_once_its_threshold_is_reached(nc: NATS) -> None:
    await _consumer(nc, "O", priority_groups=["A"], priority_policy="overflow")
    await _publish(nc, "s.1", "s.2", "s.3")
    # first in the queue, but 3 pending < 5: the request behind it is served first
    waits = await Pull(nc, "O", group="A", min_pending=5, expires=WAIT_NS).send()
    served = await Pull(nc, "O", group="A", min_pending=3, expires=WAIT_NS).send()
    first = await served.next()
    assert first.subject == "s.1"
    assert waits.msgs.empty()
    await _publish(nc, "s.4", "s.5")  # 2, 3, 4, 5 pending: still short of 5
    on_ack = await Pull(nc, "O", group="A", min_ack_pending=1, expires=WAIT_NS).send()
    assert (await on_ack.next()).subject == "s.2"  # s.1 awaits its ack
    await _publish(nc, "s.6", "s.7")  # 3..7 pending: 5
    assert (await waits.next()).subject == "s.3"
    plain = await Pull(nc, "O", group="A").send()  # no threshold: always served
    assert (await plain.next()).subject == "s.4"


async def test_pinned_client(nc: NATS) -> None:
    await _consumer(nc, "P", priority_groups=["A"], priority_policy="pinned_client")
    await _publish(nc, "s.1", "s.2", "s.3")
    first = await Pull(nc, "P", group="A").send()
    msg = await first.next()
    pin = (msg.headers or {}).get("Nats-Pin-Id", "")
    assert msg.subject == "s.1" and len(pin) >= 16
    info = await _api(nc, "CONSUMER.INFO.S.P")
    assert info["priority_groups"][0]["group"] == "A"
    assert info["priority_groups"][0]["pinned_client_id"] == pin
    assert info["priority_groups"][0]["pinned_ts"] != "0001-01-01T00:00:00Z"
    other = await Pull(nc, "P", group="A", expires=WAIT_NS).send()  # no pin: it waits
    again = await Pull(nc, "P", group="A", id=pin).send()
    msg = await again.next()
    assert (msg.subject, (msg.headers or {}).get("Nats-Pin-Id")) == ("s.2", pin)
    assert other.msgs.empty()
    wrong = await Pull(nc, "P", group="A", id="not-the-pin").send()
    assert _status(await wrong.next()) == ("423", "Nats-Pin-Id mismatch")
    assert await _api(nc, "CONSUMER.UNPIN.S.P", {"group": "A"}) == {
        "type": "io.nats.jetstream.api.v1.consumer_unpin_response"}
    # the waiting request without a pin takes the next one, with a new pin
    msg = await other.next()
    new_pin = (msg.headers or {}).get("Nats-Pin-Id", "")
    assert msg.subject == "s.3" and new_pin and new_pin != pin
    stale = await Pull(nc, "P", group="A", id=pin).send()
    assert _status(await stale.next()) == ("423", "Nats-Pin-Id mismatch")


async def test_pin_lapses_after_priority_timeout(nc: NATS) -> None:
    await _consumer(nc, "P", priority_groups=["A"], priority_policy="pinned_client",
                    priority_timeout=300_000_000)
    await _publish(nc, "s.1", "s.2")
    pin = ((await (await Pull(nc, "P", group="A").send()).next()).headers or {})["Nats-Pin-Id"]
    other = await Pull(nc, "P", group="A", expires=WAIT_NS).send()
    msg = await other.next()  # once the holder stayed silent for 300 ms
    assert msg.subject == "s.2"
    assert (msg.headers or {}).get("Nats-Pin-Id") not in (None, "", pin)


async def test_unpin_errors(nc: NATS) -> None:
    await _consumer(nc, "P", priority_groups=["A"], priority_policy="pinned_client")
    cases = [(None, 10025), ({}, 10025), ({"group": "A.B"}, 10162), ({"group": "Z"}, 10160),
             ({"group": 5}, 10025)]
    for body, err_code in cases:
        assert (await _api(nc, "CONSUMER.UNPIN.S.P", body))["error"]["err_code"] == err_code, body
    assert (await _api(nc, "CONSUMER.UNPIN.S.NOPE", {"group": "A"}))["error"]["err_code"] == 10014
    assert (await _api(nc, "CONSUMER.UNPIN.NOPE.P", {"group": "A"}))["error"]["err_code"] == 10059


async def test_prioritized_serves_lower_numbers_first(nc: NATS) -> None:
    await _consumer(nc, "R", priority_groups=["A"], priority_policy="prioritized")
    pulls = {}
    for name, priority in (("p5", 5), ("p1", 1), ("p9", 9), ("p1b", 1), ("p0", 0)):
        pulls[name] = await Pull(nc, "R", group="A", priority=priority, expires=WAIT_NS).send()
    # nats-server queues pull requests on its own goroutine: wait (bounded) until all are
    waiting = 0
    for _ in range(200):
        waiting = (await _api(nc, "CONSUMER.INFO.S.R"))["num_waiting"]
        if waiting == len(pulls):
            break
    assert waiting == len(pulls)
    await _publish(nc, *(f"s.{i}" for i in range(1, 6)))
    got = {name: (await pull.next()).subject for name, pull in pulls.items()}
    assert got == {"p0": "s.1", "p1": "s.2", "p1b": "s.3", "p5": "s.4", "p9": "s.5"}


async def test_prioritized_requests_read_together_go_by_priority(nc: NATS, server: ServerProcess) -> None:
    """Messages already stored, two pull requests in one write: priority 1 first, then 0.
    nats-server queues both before its consumer serves the waiting ones, so priority 0
    gets the first batch; the bundled server served the request that came first
    (nats.py nats-jetstream's test_consumer_prioritized_messages_stream)."""
    await _consumer(nc, "R", priority_groups=["A"], priority_policy="prioritized")
    await _publish(nc, *(f"s.{i}" for i in range(1, 21)))
    c = RawClient(server.port)
    try:
        ops = b"CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB in.1 1\r\nSUB in.0 0\r\n"
        for priority in (1, 0):
            body = json.dumps({"batch": 10, "expires": WAIT_NS, "group": "A", "priority": priority}).encode()
            ops += b"PUB %s in.%d %d\r\n%s\r\n" % (NEXT.format("R").encode(), priority, len(body), body)
        c.send(ops)
        got: dict[str, list[str]] = {"0": [], "1": []}
        while sum(map(len, got.values())) < 20:
            _, subject, sid, *_ = c.readline().split()
            c.readline()  # the payload
            got[sid.decode()].append(subject.decode())
    finally:
        c.close()
    assert got == {"0": [f"s.{i}" for i in range(1, 11)], "1": [f"s.{i}" for i in range(11, 21)]}
