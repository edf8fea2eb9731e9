"""The Router seam (core/routing.py in a running server): internal services next to nats-py clients.

A small real service (echo + counter) runs inside an in-process `NatsServer`
on the test's event loop; clients connect over real sockets.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from jetstream_server.app.server import NatsServer
from jetstream_server.config import ServerConfig
from jetstream_server.core.router import Router


class EchoService:
    """Answers `svc.echo` requests, republishes `svc.fanout.*` to `out.<token>` with headers."""

    def __init__(self) -> None:
        self.router: Router | None = None
        self.started = False
        self.closed = False
        self.seen: list[tuple[str, str | None, bytes | None, bytes]] = []
        self.sub_ids: list[int] = []

    def start(self, router: Router) -> None:
        self.router = router
        self.started = True
        self.sub_ids.append(router.subscribe("svc.echo", self._echo))
        self.sub_ids.append(router.subscribe("svc.fanout.*", self._fanout))
        self.sub_ids.append(router.subscribe("svc.work", self._work, queue="q"))

    def _echo(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.seen.append((subject, reply, headers, payload))
        assert self.router is not None
        if reply:
            self.router.publish(reply, None, None, b"echo:" + payload)

    def _fanout(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        assert self.router is not None
        token = subject.rsplit(".", 1)[1]
        # re-entrant publishes: both must reach clients in this order
        self.router.publish(f"out.{token}", "ack.me", b"NATS/1.0\r\nX-From: svc\r\n\r\n", payload)
        self.router.publish(f"out.{token}", None, None, payload + b"-2")

    def _work(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.seen.append((subject, reply, headers, payload))

    def jsz(self) -> dict[str, Any]:
        return {"streams": 0, "service": "echo"}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
async def running() -> AsyncIterator[tuple[NatsServer, EchoService]]:
    service = EchoService()
    srv = NatsServer(ServerConfig(host="127.0.0.1", port=0, http_port=0), services=[service])
    await srv.start()
    try:
        yield srv, service
    finally:
        await srv.stop()
    assert service.closed


@pytest.fixture
async def client(running: tuple[NatsServer, EchoService]) -> AsyncIterator[NATS]:
    srv, _ = running
    nc = await nats.connect(f"nats://127.0.0.1:{srv.port}", max_reconnect_attempts=0)
    try:
        yield nc
    finally:
        await nc.close()


async def test_service_started_before_clients(running: tuple[NatsServer, EchoService]) -> None:
    _, service = running
    assert service.started


async def test_internal_subscription_is_interest(client: NATS) -> None:
    reply = await client.request("svc.echo", b"hi", timeout=2)
    assert reply.data == b"echo:hi"
    with pytest.raises(NoRespondersError):
        await client.request("svc.nobody", b"hi", timeout=2)


async def test_service_publish_reaches_clients_in_order(client: NATS) -> None:
    sub = await client.subscribe("out.*")
    await client.publish("svc.fanout.a", b"m1")
    await client.publish("svc.fanout.b", b"m2")
    msgs = [await sub.next_msg(2) for _ in range(4)]
    assert [(m.subject, m.data) for m in msgs] == [
        ("out.a", b"m1"), ("out.a", b"m1-2"), ("out.b", b"m2"), ("out.b", b"m2-2"),
    ]
    assert msgs[0].reply == "ack.me"
    assert msgs[0].headers == {"X-From": "svc"}
    assert msgs[1].headers is None


async def test_internal_queue_member_shares_with_clients(
    client: NATS, running: tuple[NatsServer, EchoService]
) -> None:
    _, service = running
    got: list[bytes] = []

    async def cb(msg) -> None:  # type: ignore[no-untyped-def]
        got.append(msg.data)

    await client.subscribe("svc.work", queue="q", cb=cb)
    await client.flush()
    for i in range(200):
        await client.publish("svc.work", str(i).encode())
    await client.flush()  # the server has routed all 200 once the PONG is back

    def internal() -> list[bytes]:
        return [p for s, _, _, p in service.seen if s == "svc.work"]

    async def all_arrived() -> None:
        while len(got) + len(internal()) < 200:
            await asyncio.sleep(0.005)

    await asyncio.wait_for(all_arrived(), 5)
    assert len(got) + len(internal()) == 200
    assert got and internal()


async def test_unsubscribe_internal(running: tuple[NatsServer, EchoService], client: NATS) -> None:
    srv, service = running
    assert srv.broker.has_interest("svc.echo")
    srv.broker.unsubscribe(service.sub_ids[0])
    assert not srv.broker.has_interest("svc.echo")
    with pytest.raises(NoRespondersError):
        await client.request("svc.echo", b"x", timeout=2)


async def test_jsz_delegates_to_service(running: tuple[NatsServer, EchoService]) -> None:
    srv, _ = running
    url = f"http://127.0.0.1:{srv.http_port}/jsz"

    def fetch() -> Any:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read())

    jsz = await asyncio.get_running_loop().run_in_executor(None, fetch)
    # the service's own fields, and the server's (nats-server's /jsz has them too)
    assert {k: jsz[k] for k in ("streams", "service")} == {"streams": 0, "service": "echo"}
    assert (jsz["server_id"], jsz["accounts"], jsz["total"]) == (srv.server_id, 1, 1)
