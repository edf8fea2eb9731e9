"""nats-server's limits from a config file, on both servers: error texts and what stays open.

Connections and subscriptions (`max_connections`, `max_subscriptions`), the
protocol's size limits (`max_control_line`, `max_payload`), the time to
CONNECT (`auth_timeout`), what a client that has not authenticated can make
the server hold, the monitor's bind address and the limits `/varz` reports,
and JetStream's limits (`jetstream { limits { ... } }`, stream
`consumer_limits`, caps on names, descriptions and metadata).
"""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import nats
import pytest
from nats.js.api import ConsumerConfig, StreamConfig
from nats.js.errors import APIError
from raw_client import RawClient
from waits import until_sync

from jetstream_testing.process import ServerProcess

ConfigServer = Callable[..., ServerProcess]


def _varz(srv: ServerProcess) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.monitor_port}/varz", timeout=5) as r:
        return dict(json.loads(r.read()))


def _connected(port: int) -> RawClient:
    c = RawClient(port)
    c.send(b'CONNECT {"verbose":false}\r\n')
    assert c.until_pong() == []
    return c


def test_max_connections(config_server: ConfigServer) -> None:
    srv = config_server("max_connections: 2")
    first, second = _connected(srv.port), _connected(srv.port)
    third = RawClient(srv.port)  # the INFO still comes first
    assert third.read_all_until_close() == b"-ERR 'maximum connections exceeded'\r\n"
    first.close()
    again: list[RawClient] = []

    def slot_free() -> bool:
        """A new client gets its PONG (not the -ERR) once the server saw `first` go."""
        try:
            c = RawClient(srv.port)
            c.send(b'CONNECT {"verbose":false}\r\nPING\r\n')
            if c.readline() == b"PONG":
                again.append(c)
                return True
            c.close()
        except OSError:
            pass
        return False

    until_sync(slot_free, 10, "the closed client's slot to be free again")
    for c in (second, third, *again):
        c.close()


def test_max_subscriptions(config_server: ConfigServer) -> None:
    srv = config_server("max_subscriptions: 2")
    c = _connected(srv.port)
    c.send(b"SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nSUB d 4\r\n")
    assert c.until_pong() == [b"-ERR 'maximum subscriptions exceeded'"] * 2
    # the connection stays open and the first two still work
    c.send(b"PUB b 2\r\nok\r\nPUB c 2\r\nno\r\n")
    assert c.until_pong() == [b"MSG b 2 2", b"ok"]
    c.close()


def test_max_control_line(config_server: ConfigServer) -> None:
    srv = config_server("max_control_line: 64")
    c = _connected(srv.port)
    c.send(b"SUB " + b"a" * 80 + b" 1\r\n")
    assert c.read_all_until_close() == b"-ERR 'maximum control line exceeded'\r\n"


def test_max_payload(config_server: ConfigServer) -> None:
    srv = config_server("max_payload: 512")
    c = RawClient(srv.port)
    assert c.info["max_payload"] == 512
    c.send(b'CONNECT {"verbose":false}\r\nPUB a 512\r\n' + b"x" * 512 + b"\r\n")
    assert c.until_pong() == []
    c.send(b"PUB a 513\r\n")
    assert c.read_all_until_close() == b"-ERR 'Maximum Payload Violation'\r\n"


def test_auth_timeout(config_server: ConfigServer) -> None:
    srv = config_server('authorization { user: a, password: b, timeout: "1s" }')
    c = RawClient(srv.port, timeout=10)
    started = time.monotonic()
    assert c.read_all_until_close() == b"-ERR 'Authentication Timeout'\r\n"
    assert 0.8 < time.monotonic() - started < 8  # after the 1 s timeout; a read would time out at 10


def test_nothing_but_connect_is_held_before_authentication(config_server: ConfigServer) -> None:
    srv = config_server("authorization { token: t }")
    c = RawClient(srv.port)
    # a PUB announcing a large payload is refused at its first byte, nothing buffered
    c.send(b"PUB a 1000000\r\n" + b"x" * 1000)
    assert c.read_all_until_close() == b"-ERR 'Authorization Violation'\r\n"
    c = RawClient(srv.port)
    c.send(b"CONNECT " + b"x" * 5000)  # longer than max_control_line, no newline yet
    assert c.read_all_until_close() == b"-ERR 'maximum control line exceeded'\r\n"


@pytest.mark.parametrize("server_kind", ["bundled"], indirect=True)
def test_bundled_closes_silent_connections_without_auth(config_server: ConfigServer) -> None:
    # A deliberate difference: nats-server 2.15 keeps a connection that never
    # sends anything open when no authentication is configured; the bundled
    # server applies auth_timeout to every connection, so idle sockets cannot
    # hold connection slots. A client that sends any op is not affected.
    srv = config_server('auth_timeout: "1s"')
    silent = RawClient(srv.port)
    busy = RawClient(srv.port)
    busy.send(b"PING\r\n")
    assert busy.readline() == b"PONG"
    assert silent.read_all_until_close() == b"-ERR 'Authentication Timeout'\r\n"
    busy.send(b"PING\r\n")
    assert busy.readline() == b"PONG"
    busy.close()


def test_monitor_binds_where_told_and_varz_shows_limits(config_server: ConfigServer) -> None:
    srv = config_server(
        """
        http: "127.0.0.1:-1"
        max_connections: 100
        max_subscriptions: 50
        max_payload: 64KB
        max_control_line: 2KB
        max_pending: 8MB
        authorization { user: a, password: b, timeout: "3s" }
        """
    )
    assert srv.monitor_port
    varz = _varz(srv)
    assert varz["http_host"] == "127.0.0.1"
    assert (varz["max_connections"], varz["max_subscriptions"]) == (100, 50)
    assert (varz["max_payload"], varz["max_control_line"]) == (65536, 2048)
    assert (varz["max_pending"], varz["auth_timeout"]) == (8 * 1024 * 1024, 3)
    assert varz["auth_required"] is True
    js = varz["jetstream"]["config"]
    assert js["max_memory"] > 0 and js["max_storage"] > 0
    # bound to 127.0.0.1 only: another loopback address gets no answer
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", srv.monitor_port), timeout=2).close()


# -- JetStream ------------------------------------------------------------------------------

JS_LIMITS = """
jetstream { limits { max_ack_pending: 100, max_request_batch: 50, duplicate_window: "1m" } }
"""


async def _api(nc: Any, api: str, config: dict[str, Any]) -> dict[str, Any]:
    stream = api.split(".")[2]
    body = json.dumps({"stream_name": stream, "config": config}).encode()
    reply = await nc.request(f"$JS.API.{api}", body, timeout=5)
    return dict(json.loads(reply.data))


async def _api_error(call: Any) -> tuple[int | None, str]:
    with pytest.raises(APIError) as info:
        await call
    return info.value.err_code, str(info.value.description)


async def test_jetstream_server_limits(config_server: ConfigServer) -> None:
    srv = config_server(JS_LIMITS)
    nc = await nats.connect(srv.url, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        info = await js.add_stream(name="S", subjects=["s.>"])
        assert info.config.duplicate_window == 60.0  # the default, capped by the limit
        assert await _api_error(
            js.add_stream(name="T", subjects=["t.>"], duplicate_window=120)
        ) == (10052, "duplicates window can not be larger then server limit of 1m0s")
        # nats-py's ConsumerConfig has no max_batch: the API is called directly
        pull = await _api(nc, "CONSUMER.CREATE.S.p", {"durable_name": "p", "ack_policy": "explicit"})
        assert (pull["config"]["max_ack_pending"], pull["config"]["max_batch"]) == (100, 50)
        assert await _api_error(
            js.add_consumer("S", ConsumerConfig(durable_name="q", max_ack_pending=101))
        ) == (10121, "consumer max ack pending exceeds system limit of 100")
        refused = await _api(nc, "CONSUMER.CREATE.S.r", {"durable_name": "r", "max_batch": 51})
        assert refused["error"] == {
            "code": 400, "err_code": 10125,
            "description": "consumer max request batch exceeds server limit of 50",
        }
    finally:
        await nc.close()


async def test_stream_consumer_limits(config_server: ConfigServer) -> None:
    srv = config_server("jetstream: enabled")
    nc = await nats.connect(srv.url, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        cfg = StreamConfig(name="L", subjects=["l.>"])
        await js.add_stream(cfg, consumer_limits={"max_ack_pending": 10, "inactive_threshold": 60 * 10**9})
        c = await js.add_consumer("L", ConsumerConfig(durable_name="d", ack_policy="explicit"))
        assert (c.config.max_ack_pending, c.config.inactive_threshold) == (10, 60.0)
        assert await _api_error(
            js.add_consumer("L", ConsumerConfig(durable_name="e", max_ack_pending=11))
        ) == (10121, "consumer max ack pending exceeds system limit of 10")
        assert await _api_error(
            js.add_consumer("L", ConsumerConfig(durable_name="f", inactive_threshold=120))
        ) == (10153, "consumer inactive threshold exceeds system limit of 1m0s")
    finally:
        await nc.close()


async def test_name_description_metadata_caps(config_server: ConfigServer) -> None:
    srv = config_server("jetstream: enabled")
    nc = await nats.connect(srv.url, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        assert await _api_error(js.add_stream(name="N" * 256, subjects=["n.>"])) == (
            10052, "stream name is too long, maximum allowed is 255",
        )
        assert await _api_error(
            js.add_stream(name="D", subjects=["d.>"], description="x" * 4097)
        ) == (10052, "stream description is too long, maximum allowed is 4096")
        assert await _api_error(
            js.add_stream(name="M", subjects=["m.>"], metadata={"k": "v" * 131072})
        ) == (10052, "stream metadata exceeds maximum size of 131072 bytes")
        await js.add_stream(name="OK", subjects=["ok.>"], description="x" * 4096)
        assert await _api_error(
            js.add_consumer("OK", ConsumerConfig(durable_name="c", description="x" * 4097))
        ) == (10107, "consumer description is too long, maximum allowed is 4096")
        assert await _api_error(
            js.add_consumer("OK", ConsumerConfig(durable_name="c", metadata={"k": "v" * 131072}))
        ) == (10135, "consumer metadata exceeds maximum size of 128KB")
    finally:
        await nc.close()
