"""Publish and subscribe permissions, on both servers started with the same config file.

Byte-exact answers come from a raw socket client (`RawClient`); what a real
client sees comes from nats-py. The JetStream part checks the promise of
docs/security.md: a user limited to one durable of one stream can fetch and ack, and
can neither create nor delete streams nor read other streams.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import nats
import pytest
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ConsumerConfig
from nats.js.errors import APIError
from raw_client import RawClient

from jetstream_testing.process import ServerProcess

ConfigServer = Callable[..., ServerProcess]

USERS = """
authorization {
  default_permissions {
    publish: { deny: ">" }
    subscribe: { deny: ">" }
  }
  users = [
    { user: admin, password: admin, permissions: { publish: ">", subscribe: ">" } }
    { user: pub, password: pub,
      permissions: {
        publish: { allow: ["orders.>", "audit.*"], deny: ["orders.secret", "orders.hidden.>"] }
        subscribe: "_INBOX.>"
      } }
    { user: sub, password: sub,
      permissions: {
        publish: "nothing.at.all"
        subscribe: { allow: ["orders.>", "jobs.* workers", "tasks.> w.*"],
                     deny: ["orders.secret", "jobs.x workers"] }
      } }
    { user: responder, password: responder,
      permissions: { subscribe: "svc.>", allow_responses: { max: 2 } } }
    { user: nobody, password: nobody }
  ]
}
"""


def _login(port: int, user: str, verbose: bool = False) -> RawClient:
    c = RawClient(port)
    options = {"verbose": verbose, "user": user, "pass": user}
    c.send(b"CONNECT " + json.dumps(options).encode() + b"\r\n")
    return c


def _pub_violation(subject: str) -> bytes:
    return f"-ERR 'Permissions Violation for Publish to \"{subject}\"'".encode()


def _sub_violation(subject: str, queue: str | None = None) -> bytes:
    text = f"-ERR 'Permissions Violation for Subscription to \"{subject}\""
    if queue:
        text += f' using queue "{queue}"'
    return (text + "'").encode()


def test_publish_allow_and_deny(config_server: ConfigServer) -> None:
    srv = config_server(USERS)
    watcher = _login(srv.port, "admin")
    watcher.send(b"SUB > 1\r\n")
    watcher.until_pong()
    c = _login(srv.port, "pub")
    c.send(
        b"PUB orders.new 1\r\na\r\n"  # allowed
        b"PUB orders.secret 1\r\nb\r\n"  # denied, though allowed by orders.>
        b"PUB orders.hidden.x.y 1\r\nc\r\n"  # denied by a wildcard deny
        b"PUB audit.log 1\r\nd\r\n"  # allowed by audit.*
        b"PUB audit.log.deep 1\r\ne\r\n"  # audit.* is one token only
        b"PUB other 1\r\nf\r\n"  # not in the allow list
    )
    assert c.until_pong() == [
        _pub_violation("orders.secret"),
        _pub_violation("orders.hidden.x.y"),
        _pub_violation("audit.log.deep"),
        _pub_violation("other"),
    ]
    # the connection stays open, and a denied message reached nobody
    c.send(b"PUB orders.after 1\r\ng\r\n")
    assert c.until_pong() == []
    got = watcher.until_pong()
    assert [line for line in got if line.startswith(b"MSG")] == [
        b"MSG orders.new 1 1", b"MSG audit.log 1 1", b"MSG orders.after 1 1",
    ]


def test_default_permissions_apply_to_users_without_their_own(config_server: ConfigServer) -> None:
    srv = config_server(USERS)
    c = _login(srv.port, "nobody", verbose=True)
    c.send(b"SUB anything 1\r\nPUB anything 1\r\nx\r\n")
    assert c.until_pong() == [
        b"+OK", _sub_violation("anything"), _pub_violation("anything"),
    ]


def test_subscribe_allow_deny_and_queues(config_server: ConfigServer) -> None:
    srv = config_server(USERS)
    c = _login(srv.port, "sub")
    c.send(
        b"SUB orders.new 1\r\n"  # allowed
        b"SUB orders.secret 2\r\n"  # denied
        b"SUB orders.* 3\r\n"  # a wildcard inside the allowed space
        b"SUB > 4\r\n"  # wider than allowed
        b"SUB jobs.a 5\r\n"  # only queue subscriptions in 'workers'
        b"SUB jobs.a workers 6\r\n"  # allowed
        b"SUB jobs.a others 7\r\n"  # wrong queue
        b"SUB jobs.x workers 8\r\n"  # queue-qualified deny
        b"SUB tasks.t w.1 9\r\n"  # queue matches the pattern w.*
        b"SUB tasks.t v 10\r\n"
        b"SUB orders.q any 11\r\n"  # a plain allow entry allows any queue
    )
    assert c.until_pong() == [
        _sub_violation("orders.secret"),
        _sub_violation(">"),
        _sub_violation("jobs.a"),
        _sub_violation("jobs.a", "others"),
        _sub_violation("jobs.x", "workers"),
        _sub_violation("tasks.t", "v"),
    ]


def test_wildcard_subscription_does_not_receive_denied_subjects(config_server: ConfigServer) -> None:
    srv = config_server(USERS)
    c = _login(srv.port, "sub")
    c.send(b"SUB orders.* 1\r\n")
    assert c.until_pong() == []
    admin = _login(srv.port, "admin")
    admin.send(b"PUB orders.secret 1\r\ns\r\nPUB orders.open 1\r\no\r\n")
    admin.until_pong()
    got = c.until_pong()
    assert got == [b"MSG orders.open 1 1", b"o"]


def test_allow_responses(config_server: ConfigServer) -> None:
    srv = config_server(USERS)
    svc = _login(srv.port, "responder")
    svc.send(b"SUB svc.echo 1\r\n")
    svc.until_pong()
    svc.send(b"PUB elsewhere 1\r\nx\r\n")
    assert svc.until_pong() == [_pub_violation("elsewhere")]
    admin = _login(srv.port, "admin")
    admin.send(b"SUB reply.box 1\r\nPUB svc.echo reply.box 1\r\nq\r\n")
    admin.until_pong()
    assert svc.until_pong() == [b"MSG svc.echo 1 reply.box 1", b"q"]
    # max: 2 answers to one request, the third is refused
    svc.send(b"PUB reply.box 2\r\nr1\r\nPUB reply.box 2\r\nr2\r\nPUB reply.box 2\r\nr3\r\n")
    assert svc.until_pong() == [_pub_violation("reply.box")]
    got = admin.until_pong()
    assert got == [b"MSG reply.box 1 2", b"r1", b"MSG reply.box 1 2", b"r2"]


async def _seen(errors: list[str], text: str) -> None:
    """Wait (briefly) for error_cb, which nats-py calls from a task of its own."""
    for _ in range(100):
        if text in errors:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{text!r} not in {errors!r}")


async def test_nats_py_sees_violation_and_keeps_connection(config_server: ConfigServer) -> None:
    srv = config_server(USERS)
    errors: list[str] = []

    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    nc = await nats.connect(
        srv.url, user="pub", password="pub", error_cb=on_error, max_reconnect_attempts=0
    )
    try:
        await nc.publish("orders.secret", b"x")
        await nc.flush(2)
        # nats-py hands the -ERR text to error_cb lower-cased
        await _seen(errors, 'nats: permissions violation for publish to "orders.secret"')
        assert nc.is_connected
        sub = await nc.subscribe("orders.mine")
        await nc.flush(2)
        await _seen(errors, 'nats: permissions violation for subscription to "orders.mine"')
        assert nc.is_connected
        await sub.unsubscribe()
    finally:
        await nc.close()


# -- JetStream under permissions ------------------------------------------------------------

WORKER = """
authorization {
  users = [
    { user: admin, password: admin }
    { user: worker, password: worker,
      permissions: {
        publish: { allow: [
          "$JS.API.CONSUMER.INFO.ORDERS.worker",
          "$JS.API.CONSUMER.MSG.NEXT.ORDERS.worker",
          "$JS.ACK.ORDERS.worker.>"
        ] }
        subscribe: { allow: "_INBOX.>" }
      } }
  ]
}
"""


async def test_consume_only_user(config_server: ConfigServer) -> None:
    srv = config_server(WORKER)
    admin = await nats.connect(srv.url, user="admin", password="admin", max_reconnect_attempts=0)
    errors: list[str] = []

    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    worker = await nats.connect(
        srv.url, user="worker", password="worker", error_cb=on_error, max_reconnect_attempts=0
    )
    try:
        ajs = admin.jetstream()
        await ajs.add_stream(name="ORDERS", subjects=["orders.>"])
        await ajs.add_stream(name="OTHER", subjects=["other.>"])
        await ajs.add_consumer("ORDERS", ConsumerConfig(durable_name="worker", ack_policy="explicit"))
        for i in range(3):
            await ajs.publish("orders.new", str(i).encode())
        await ajs.publish("other.x", b"secret")

        wjs = worker.jetstream()
        psub = await wjs.pull_subscribe("orders.>", durable="worker", stream="ORDERS")
        msgs = await psub.fetch(3, timeout=5)
        assert [m.data for m in msgs] == [b"0", b"1", b"2"]
        for m in msgs:
            await m.ack_sync(timeout=5)
        info = await ajs.consumer_info("ORDERS", "worker")
        assert info.num_ack_pending == 0 and info.ack_floor.stream_seq == 3

        # everything else is refused: the request is dropped, so it times out (the four
        # wait side by side: each must fail on its own)
        refused = await asyncio.gather(
            *(
                asyncio.wait_for(forbidden, 1.5)
                for forbidden in (
                    wjs.add_stream(name="MINE", subjects=["mine.>"]),
                    wjs.delete_stream("ORDERS"),
                    wjs.stream_info("OTHER"),
                    wjs.get_msg("OTHER", 1),
                )
            ),
            return_exceptions=True,
        )
        for outcome in refused:
            assert isinstance(outcome, (NatsTimeoutError, asyncio.TimeoutError, APIError, NatsError)), outcome

        async def pull_other() -> None:
            other = await wjs.pull_subscribe("other.>", durable="worker", stream="OTHER")
            await other.fetch(1, timeout=1)

        with pytest.raises((NatsTimeoutError, asyncio.TimeoutError, NatsError)):
            await asyncio.wait_for(pull_other(), 1.5)  # not nats-py's 5 s request timeout
        for api in ("STREAM.CREATE.MINE", "STREAM.DELETE.ORDERS", "STREAM.INFO.OTHER"):
            await _seen(errors, f'nats: permissions violation for publish to "$js.api.{api.lower()}"')
        assert (await ajs.stream_info("ORDERS")).state.messages == 3
        # a worker cannot read traffic it has no subscribe permission for
        with pytest.raises((NatsTimeoutError, asyncio.TimeoutError)):
            sub = await worker.subscribe("orders.>")
            await sub.next_msg(0.5)
    finally:
        await worker.close()
        await admin.close()
