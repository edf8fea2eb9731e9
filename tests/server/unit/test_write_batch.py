"""Write batching and closing on the asyncio side (app/write_batch.py, app/connection.py).

Hypercorn style: `ClientConnection`s are driven with in-memory transport and
host doubles on the test's event loop; no sockets. The invariants: one
`transport.write` per connection per read batch, output produced outside a
read flushed on the next loop turn, slow consumers and protocol errors
closed the way the module docstrings say.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from jetstream_server.app.connection import ClientConnection
from jetstream_server.app.write_batch import WriteBatcher
from jetstream_server.config import ServerConfig
from jetstream_server.core.auth import StaticAuth
from jetstream_server.core.clock import FakeClock
from jetstream_server.core.routing import Broker
from jetstream_server.core.session import State


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.buffered = 0
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not (self.closed or self.aborted), "write after close"
        self.writes.append(bytes(data))

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True


class Host:
    """A `ConnectionHost` double: the parts of a server a connection uses."""

    def __init__(self, config: ServerConfig) -> None:
        self.loop = asyncio.get_running_loop()
        self.config = config
        self.broker = Broker()
        self.auth = config.auth.authenticator()
        self.session_settings = config.session_settings()
        self.batcher = WriteBatcher(self.loop)
        self.clock = FakeClock()
        self.tls_context = None
        self.watchdog = None
        self.account_brokers: dict[str, Broker] = {}  # every session stays on `broker`
        self.open: dict[int, ClientConnection] = {}
        self.slow_consumers = 0

    def info_for(self, conn: ClientConnection | None) -> dict[str, Any]:
        return {"server_id": "TEST", "client_id": conn.cid if conn else 0}

    def connection_opened(self, conn: ClientConnection) -> bool:
        self.open[conn.cid] = conn
        return True

    def connection_closed(self, conn: ClientConnection) -> None:
        del self.open[conn.cid]

    def slow_consumer_detected(self, conn: ClientConnection) -> None:
        self.slow_consumers += 1

    def connect(self, cid: int, hello: bytes = b'CONNECT {"verbose":false}\r\n') -> tuple[ClientConnection, FakeTransport]:
        conn = ClientConnection(self, cid)
        transport = FakeTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        assert transport.writes == [b'INFO {"server_id":"TEST","client_id":%d}\r\n' % cid]
        transport.writes.clear()
        conn.data_received(hello)
        return conn, transport


def _config(**changes: Any) -> ServerConfig:
    return replace(ServerConfig(ping_interval_s=0), **changes)


async def test_one_write_per_connection_per_read() -> None:
    host = Host(_config())
    subs = [host.connect(i) for i in (1, 2, 3)]
    for conn, _ in subs:
        conn.data_received(b"SUB fan 1\r\n")
    pub, pub_transport = host.connect(4)
    pub.data_received(b"PUB fan 2\r\nhi\r\n" * 100)
    for _, transport in subs:
        assert transport.writes == [b"MSG fan 1 2\r\nhi\r\n" * 100]
    assert pub_transport.writes == []


async def test_output_outside_a_read_goes_out_on_the_next_turn() -> None:
    host = Host(_config())
    conn, transport = host.connect(1)
    conn.data_received(b"SUB svc.out 1\r\n")
    host.broker.publish("svc.out", None, None, b"a")  # a service publishing, no read going on
    host.broker.publish("svc.out", None, None, b"b")
    assert transport.writes == []
    await asyncio.sleep(0)
    assert transport.writes == [b"MSG svc.out 1 1\r\na\r\nMSG svc.out 1 1\r\nb\r\n"]


async def test_slow_consumer_says_why_and_closes() -> None:
    host = Host(_config(max_pending=1000))
    lazy, lazy_transport = host.connect(1)
    lazy.data_received(b"SUB a 1\r\n")
    pub, _ = host.connect(2)
    pub.data_received((b"PUB a 100\r\n" + b"x" * 100 + b"\r\n") * 20)
    assert lazy_transport.writes == [b"-ERR 'Slow Consumer'\r\n"]
    assert lazy_transport.closed and not lazy_transport.aborted
    assert host.slow_consumers == 1
    assert list(host.open) == [2] and host.broker.num_subscriptions == 0


async def test_slow_consumer_by_transport_buffer_without_room_aborts() -> None:
    host = Host(_config(max_pending=1000))
    lazy, lazy_transport = host.connect(1)
    lazy.data_received(b"SUB a 1\r\n")
    lazy_transport.buffered = 1 << 20  # the kernel and the transport hold a lot already
    pub, _ = host.connect(2)
    pub.data_received(b"PUB a 1\r\nx\r\n")
    assert lazy_transport.writes == [b"MSG a 1 1\r\nx\r\n"]  # written, then found over the limit
    assert lazy_transport.aborted
    assert host.slow_consumers == 1


async def test_protocol_error_writes_err_then_closes() -> None:
    host = Host(_config())
    conn, transport = host.connect(1, b"CONNECT {}\r\nPING\r\nBOGUS\r\n")
    assert transport.writes == [b"+OK\r\nPONG\r\n-ERR 'Unknown Protocol Operation'\r\n"]
    assert transport.closed
    assert conn.closed and conn.session.state is State.CLOSED
    conn.data_received(b"PING\r\n")  # ignored after close
    assert len(transport.writes) == 1


async def test_connection_lost_removes_subscriptions() -> None:
    host = Host(_config())
    conn, transport = host.connect(1)
    conn.data_received(b"SUB a 1\r\nSUB b 2\r\n")
    assert host.broker.num_subscriptions == 2
    conn.connection_lost(None)
    assert host.broker.num_subscriptions == 0
    assert host.open == {} and not transport.closed and not transport.aborted


async def _next_turns() -> None:
    """Let the loop run the timers that are due now (a zero delay)."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def test_auth_timeout_closes_a_silent_client() -> None:
    host = Host(_config(auth_timeout_s=0.0))
    host.auth = StaticAuth(token="t")
    conn, transport = host.connect(1, b"")
    await _next_turns()
    assert transport.writes == [b"-ERR 'Authentication Timeout'\r\n"]
    assert transport.closed and conn.closed


async def test_auth_timeout_spares_a_connected_client() -> None:
    host = Host(_config(auth_timeout_s=0.0))
    host.auth = StaticAuth(token="t")
    conn, transport = host.connect(1, b'CONNECT {"verbose":false,"auth_token":"t"}\r\nPING\r\n')
    await _next_turns()
    assert transport.writes == [b"PONG\r\n"]
    assert not transport.closed and conn.session.state is State.CONNECTED
