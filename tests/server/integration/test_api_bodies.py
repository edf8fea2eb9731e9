"""What each `$JS.API` route does with the body it is sent (both servers).

Recorded from nats-server 2.15.1: routes that take no body (STREAM.DELETE,
CONSUMER.INFO, CONSUMER.DELETE) refuse any but an empty one (no bytes, `{}`, an
object without keys) with 400 10038 and do nothing; routes whose body is
optional ignore one that is not JSON; request bodies are decoded strictly (an
unknown key is 400 10025); the routes of clustering answer 503 10010. Issue 24:
the bundled server deleted a stream whose delete request carried a body.
"""

from __future__ import annotations

import itertools
import json

import pytest
from js_helpers import API
from nats.aio.client import Client as NATS

pytestmark = pytest.mark.asyncio
_names = itertools.count()

NOT_EMPTY = (400, 10038, "expected an empty request payload")
CLUSTER_REQUIRED = (503, 10010, "JetStream clustering support required")
OK = None


@pytest.fixture
def nc(shared_nc: NATS) -> NATS:
    return shared_nc


class Api:
    """A stream `S<n>` of its own with a message and a durable `C` (one server for
    the module): routes are written with `S` and asked of `S<n>`."""

    def __init__(self, nc: NATS) -> None:
        self.nc = nc
        self.stream = f"S{next(_names)}"

    async def setup(self) -> None:
        js = self.nc.jetstream()
        await js.add_stream(name=self.stream, subjects=[f"{self.stream}.>"])
        await js.publish(f"{self.stream}.a", b"x")
        await js.add_consumer(self.stream, durable_name="C", ack_policy="explicit")

    async def ask(self, route: str, body: bytes) -> tuple[int, int, str] | None:
        tokens = [self.stream if t == "S" else t for t in route.split(".")]
        body = body.replace(b'"S"', f'"{self.stream}"'.encode())
        msg = await self.nc.request(API + ".".join(tokens), body, timeout=5)
        error = json.loads(msg.data).get("error")
        return None if error is None else (error["code"], error["err_code"], error["description"])


async def setup(nc: NATS) -> Api:
    api = Api(nc)
    await api.setup()
    return api


@pytest.mark.parametrize("route", ["STREAM.DELETE.S", "CONSUMER.INFO.S.C", "CONSUMER.DELETE.S.C"])
async def test_routes_without_a_body_refuse_one(nc: NATS, route: str) -> None:
    api = await setup(nc)
    for body in (b"null", b'{"x":1}', b"garbage", b"[]", b" ", b"1"):
        assert await api.ask(route, body) == NOT_EMPTY, body
    js = nc.jetstream()
    assert (await js.consumer_info(api.stream, "C")).name == "C"  # nothing was deleted


@pytest.mark.parametrize("body", [b"", b"{}", b"{ }", b"{\n}"])
@pytest.mark.parametrize("route", ["CONSUMER.INFO.S.C", "CONSUMER.DELETE.S.C", "STREAM.DELETE.S"])
async def test_routes_without_a_body_take_an_empty_one(nc: NATS, route: str, body: bytes) -> None:
    api = await setup(nc)
    assert await api.ask(route, body) == OK


@pytest.mark.parametrize(
    "route",
    ["STREAM.NAMES", "STREAM.LIST", "STREAM.INFO.S", "STREAM.PURGE.S", "CONSUMER.NAMES.S",
     "CONSUMER.LIST.S", "CONSUMER.PAUSE.S.C"],
)
async def test_optional_bodies(nc: NATS, route: str) -> None:
    api = await setup(nc)
    for body in (b"garbage", b"null", b" ", b"1"):
        assert await api.ask(route, body) == OK, body  # not JSON: ignored
    assert await api.ask(route, b'{"x":1}') == (400, 10025, 'invalid JSON: json: unknown field "x"')
    code = await api.ask(route, b"[]")
    assert code is not None and code[:2] == (400, 10025)


@pytest.mark.parametrize(
    ("route", "body", "expected"),
    [
        ("STREAM.MSG.GET.S", b"{ }", (400, 10003, "bad request")),
        ("STREAM.MSG.GET.S", b'{"seq":1,"x":1}', (400, 10025, 'invalid JSON: json: unknown field "x"')),
        ("STREAM.MSG.DELETE.S", b"{}", (400, 10003, "bad request")),
        ("STREAM.MSG.DELETE.S", b"null", (500, 10057, "no message found")),
        ("STREAM.MSG.DELETE.S", b" ", (500, 10057, "no message found")),
        ("STREAM.MSG.DELETE.S", b'{"seq":1,"x":1}', (400, 10025, 'invalid JSON: json: unknown field "x"')),
        ("STREAM.SNAPSHOT.S", b"{ }", (400, 10003, "bad request")),
        ("STREAM.SNAPSHOT.S", b"null", (400, 10015, "deliver subject not valid")),
        ("STREAM.SNAPSHOT.S", b'{"x":1}', (400, 10025, 'invalid JSON: json: unknown field "x"')),
        ("CONSUMER.RESET.S.C", b" ", (400, 10025, "invalid JSON: unexpected end of JSON input")),
        ("CONSUMER.UNPIN.S.C", b'{"x":1}', (400, 10025, "invalid JSON: consumer group not specified")),
        ("CONSUMER.CREATE.S.D", b'{"stream_name":"S","config":{},"x":1}',
         (400, 10025, 'invalid JSON: json: unknown field "x"')),
        ("STREAM.UPDATE.S", b"", (500, 10052, "stream name is required and can not contain "
                                             "'.', '*', '>', '\\', '/'")),
    ],
)
async def test_request_bodies(nc: NATS, route: str, body: bytes, expected: tuple[int, int, str]) -> None:
    api = await setup(nc)
    assert await api.ask(route, body) == expected


@pytest.mark.parametrize(
    "route",
    ["STREAM.LEADER.STEPDOWN.S", "CONSUMER.LEADER.STEPDOWN.S.C", "STREAM.PEER.REMOVE.S",
     "STREAM.PEER.EVACUATE.S", "STREAM.CANCEL_MOVE.S"],
)
async def test_clustering_routes_need_clustering(nc: NATS, route: str) -> None:
    api = await setup(nc)
    for body in (b"", b"garbage"):
        assert await api.ask(route, body) == CLUSTER_REQUIRED
