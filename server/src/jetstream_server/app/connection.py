"""One client connection on asyncio: moves bytes between a transport and its `Session`.

An `asyncio.Protocol`. Everything the protocol decides (CONNECT and auth,
subscriptions, ``+OK``/``-ERR``, deliveries, when to close and what to say)
lives in the sans-IO `jetstream_server.core.session.Session`; this class only
reads, writes, runs the timers (ping interval, auth timeout, write deadline)
and upgrades to TLS (nats-server style: INFO in clear, then the client starts
the handshake; done with `loop.start_tls` right after INFO; with
`handshake_first` the handshake comes first and INFO is sent inside TLS, and
with its fallback delay a client silent for that long gets INFO in clear).

Invariants:
- outbound bytes wait in the session and are written with one
  `transport.write` per connection per batch, never one write per message:
  connections that got bytes while the server handles one read are flushed
  right after that read; bytes produced elsewhere (timers, services) are
  flushed on the next event-loop turn (`WriteBatcher`);
- pending outbound bytes (the session's queue plus the transport's buffer)
  above `max_pending` make a slow consumer: counted, ``-ERR 'Slow Consumer'``
  written if the transport has room for it, then the connection closes;
- with TLS, application data decrypted before `start_tls` returns is held
  and processed once the TLS transport is in place; nothing is written to
  the plain transport after INFO;
- a transport that stays paused (buffer over its high-water mark) for
  `write_deadline` is a slow consumer too;
- every PING interval the session is told to ping (it decides when the
  connection is stale); the auth timer runs on every connection (with or
  without authentication: a client that never sends CONNECT, or with no
  authentication no op at all, is closed with ``-ERR 'Authentication
  Timeout'``) until the session is no longer `awaiting_connect`;
- a connection over `max_connections` gets its INFO, then
  ``-ERR 'maximum connections exceeded'``, and is closed;
- a transport error is a close without writing (`abort`);
- a read too large to apply in one turn (the session `holding` ops) pauses
  reading; the held ops are applied a bounded share per loop turn, then
  reading resumes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

from jetstream_server.app.loop_watchdog import LoopWatchdog
from jetstream_server.app.write_batch import WriteBatcher
from jetstream_server.config import ServerConfig
from jetstream_server.core.auth import Authenticator
from jetstream_server.core.clock import Clock
from jetstream_server.core.routing import Broker
from jetstream_server.core.session import Close, Event, Session, SessionSettings

log = logging.getLogger(__name__)

TRANSPORT_ERRORS = (ConnectionError, OSError, ssl.SSLError, asyncio.CancelledError)

# room a slow consumer's transport must still have for the -ERR that says why
_ROOM_FOR_ERR = 65536
_TLS_HANDSHAKE_TIMEOUT_S = 5.0


class ConnectionHost(Protocol):
    """What a connection needs of the server that accepted it."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def config(self) -> ServerConfig: ...

    @property
    def broker(self) -> Broker: ...

    @property
    def auth(self) -> Authenticator: ...

    @property
    def account_brokers(self) -> Mapping[str, Broker]: ...

    @property
    def session_settings(self) -> SessionSettings: ...

    @property
    def batcher(self) -> WriteBatcher: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def tls_context(self) -> ssl.SSLContext | None: ...

    @property
    def watchdog(self) -> LoopWatchdog | None:
        """Times each read (a slow one is logged with what it started with); None: untimed."""
        ...

    def info_for(self, conn: ClientConnection | None) -> dict[str, Any]: ...

    def connection_opened(self, conn: ClientConnection) -> bool:
        """Register `conn`; False when the server is at `max_connections`."""
        ...

    def connection_closed(self, conn: ClientConnection) -> None: ...

    def slow_consumer_detected(self, conn: ClientConnection) -> None: ...


class ClientConnection(asyncio.Protocol):
    def __init__(self, host: ConnectionHost, cid: int, *, websocket: bool = False) -> None:
        self.host = host
        # a WebSocket client: TLS, if any, was the listener's (never upgraded here)
        self.websocket = websocket
        self.config = host.config
        self.cid = cid
        self.loop = host.loop
        self.transport: asyncio.Transport | None = None
        self._batcher = host.batcher
        # times each read: a slow one is logged with what it started with (the server's)
        self._watchdog = host.watchdog
        # SessionIO.output_ready: the batcher's schedule for this connection
        self.output_ready: Callable[[], None] = self._batcher.waker(self)
        self.session = Session(
            cid, host.broker, self, host.session_settings, host.auth, host.clock,
            host.account_brokers,
        )
        self.closed = False
        self.tls_pending = False
        self.ip = ""
        self.port = 0
        self.start = time.time()
        self.last_activity = self.start
        self._ping_timer: asyncio.TimerHandle | None = None
        self._auth_timer: asyncio.TimerHandle | None = None
        self._expiry_timer: asyncio.TimerHandle | None = None
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._fallback_timer: asyncio.TimerHandle | None = None
        self._tls_task: asyncio.Task[None] | None = None
        self._early: list[bytes] = []
        self._holding = False  # reading paused while the session applies held ops
        self._max_pending = self.config.max_pending

    # -- asyncio.Protocol --------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports quack like asyncio.Transport without subclassing it
        self.transport = cast(asyncio.Transport, transport)
        peer = self.transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.ip, self.port = str(peer[0]), int(peer[1])
        session = self.session
        session.ip, session.port = self.ip, self.port
        accepted = self.host.connection_opened(self)
        tls = None if self.websocket else self.host.tls_context
        tls_first = tls is not None and self.config.tls.handshake_first
        if not tls_first or not accepted:
            self.transport.write(session.greeting(self.host.info_for(self)))
        if not accepted:
            log.error("cid=%d maximum connections exceeded, refusing %s:%d", self.cid, self.ip, self.port)
            session.max_connections_exceeded()
            return
        # always on, with or without authentication: a connection that never
        # completes its CONNECT holds a slot for no one (see the module docstring)
        self._auth_timer = self.loop.call_later(
            self.config.auth_timeout_s + (1.0 if tls is not None else 0.0),
            self._auth_timeout,
        )
        if tls is not None:
            self.tls_pending = True
            fallback = self.config.tls.handshake_first_fallback_s
            if tls_first and fallback > 0:
                # nothing read until we know whether the client starts with TLS
                self.transport.pause_reading()
                self._fallback_timer = self.loop.call_later(fallback, self._tls_first_or_info, tls)
            else:
                self._start_tls(tls, info_after=tls_first)
        self._schedule_ping()

    def _start_tls(self, ctx: ssl.SSLContext, *, info_after: bool) -> None:
        assert self.transport is not None
        self._tls_task = self.loop.create_task(self._upgrade_tls(self.transport, ctx, info_after))

    def _tls_first_or_info(self, ctx: ssl.SSLContext) -> None:
        """`handshake_first` with a fallback delay, once the delay passed: a
        client that sent something starts TLS first; one that sent nothing
        waits for INFO, which goes out in clear text (nats-server's fallback)."""
        self._fallback_timer = None
        if self.closed or self.transport is None:
            return
        client_spoke = _has_pending_input(self.transport)
        if not client_spoke:
            self.transport.write(self.session.greeting(self.host.info_for(self)))
        self._start_tls(ctx, info_after=client_spoke)

    async def _upgrade_tls(
        self, transport: asyncio.Transport, ctx: ssl.SSLContext, info_after: bool
    ) -> None:
        try:
            new_transport = await self.loop.start_tls(
                transport,
                self,
                ctx,
                server_side=True,
                ssl_handshake_timeout=_TLS_HANDSHAKE_TIMEOUT_S,
            )
        except TRANSPORT_ERRORS as exc:
            log.debug("cid=%d TLS handshake failed: %s", self.cid, exc)
            self._fail()
            return
        if new_transport is None or self.closed:
            log.debug("cid=%d closed during the TLS handshake", self.cid)
            self._fail()
            return
        self.transport = new_transport
        self.tls_pending = False
        if info_after:
            # TLS first: INFO is the first thing said inside the TLS session
            new_transport.write(self.session.greeting(self.host.info_for(self)))
        early, self._early = self._early, []
        for data in early:
            self.data_received(data)
        if self.session.pending_output:
            self._batcher.schedule(self)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        if self.tls_pending:
            # decrypted bytes that came in with the end of the handshake, before
            # start_tls() handed us the TLS transport: keep them for _upgrade_tls
            self._early.append(data)
            return
        self.last_activity = time.time()
        self._apply(lambda: self._describe_read(data), self.session.receive_data, data)
        self._hold_if_busy()
        if self._auth_timer is not None and not self.session.awaiting_connect:
            self._auth_timer.cancel()
            self._auth_timer = None
            identity = self.session.identity
            if identity is not None and identity.expires and not self.closed:
                # a user JWT with `exp`: the connection ends when it does
                self._expiry_timer = self.loop.call_later(
                    max(0.0, identity.expires - time.time()), self.session.auth_expired
                )

    def _apply(self, name: Callable[[], str], fn: Callable[..., None], *args: object) -> None:
        """Run session work (timed by the watchdog), then flush what it queued."""
        batcher = self._batcher
        batcher.reading = True
        try:
            watchdog = self._watchdog
            if watchdog is None:
                fn(*args)
            else:
                watchdog.step(name, fn, *args)
        finally:
            self.session.last_ops = []  # (only the watchdog reads them: payloads not kept)
            batcher.reading = False
            batcher.flush_dirty()

    def _hold_if_busy(self) -> None:
        """The session holds ops of a large read: stop reading until they are applied,
        a bounded share per loop turn."""
        if self.session.holding and not self._holding and not self.closed and self.transport:
            self._holding = True
            self.transport.pause_reading()
            self.loop.call_soon(self._continue_ops)

    def _continue_ops(self) -> None:
        if self.closed or self.transport is None:
            return
        self._apply(lambda: self._describe_ops("held ops"), self.session.continue_ops)
        if self.closed:
            return
        if self.session.holding:
            self.loop.call_soon(self._continue_ops)
            return
        self._holding = False
        self.transport.resume_reading()

    def _describe_read(self, data: bytes) -> str:
        """Names a slow read for the watchdog's warning: the client and the ops it held."""
        return self._describe_ops(f"{len(data)} bytes read")

    def _describe_ops(self, what: str) -> str:
        ops = self.session.last_ops
        names = [
            f"{type(op).__name__.upper()} {getattr(op, 'subject', '')}".rstrip() for op in ops[:3]
        ]
        more = f" and {len(ops) - 3} more" if len(ops) > 3 else ""
        return f"client {self.cid} ({what}: {', '.join(names) or 'no op'}{more})"

    def connection_lost(self, exc: Exception | None) -> None:
        self.session.transport_lost()
        self._cleanup()

    def pause_writing(self) -> None:
        # the transport's buffer is over its high-water mark: the client has
        # `write_deadline` to drain it, or it is a slow consumer
        deadline = self.config.write_deadline_s
        if deadline > 0 and self._deadline_timer is None and not self.closed:
            self._deadline_timer = self.loop.call_later(deadline, self._write_deadline_exceeded)

    def resume_writing(self) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None

    def _write_deadline_exceeded(self) -> None:
        self._deadline_timer = None
        if not self.closed:
            log.warning(
                "cid=%d write deadline of %.1fs exceeded", self.cid, self.config.write_deadline_s
            )
            self.session.slow_consumer()

    # -- SessionIO (and `output_ready`, set in __init__) ------------------------------
    def session_closed(self, close: Close) -> None:
        if self.closed:
            return
        transport = self.transport
        event = close.event
        if event is Event.SLOW_CONSUMER:
            self._close_slow_consumer()
        elif event is Event.TRANSPORT_LOST:
            self._cleanup()
        elif event is Event.TRANSPORT_FAILED:
            self._abort()
        else:
            # what is queued (ending with the -ERR, if any) goes out, then a graceful close
            self._write_now()
            self._cleanup()
            if transport is not None:
                transport.close()

    def buffered_bytes(self) -> int:
        transport = self.transport
        return transport.get_write_buffer_size() if transport is not None else 0

    # -- outbound ----------------------------------------------------------------
    def flush(self) -> None:
        """Write everything the session queued, in one `transport.write`."""
        transport = self.transport
        if self.closed or transport is None or self.tls_pending:
            return
        data = self.session.data_to_send()
        if not data:
            return
        try:
            transport.write(data)
        except TRANSPORT_ERRORS as exc:
            log.debug("cid=%d write failed: %s", self.cid, exc)
            self._fail()
            return
        if transport.get_write_buffer_size() > self._max_pending:
            self.session.slow_consumer()

    def _write_now(self) -> None:
        transport = self.transport
        if transport is None or self.tls_pending:
            return
        data = self.session.data_to_send()
        if not data:
            return
        try:
            transport.write(data)
        except TRANSPORT_ERRORS:
            pass  # closing anyway

    def _close_slow_consumer(self) -> None:
        self.host.slow_consumer_detected(self)
        log.warning(
            "cid=%d slow consumer detected (%s:%d), pending bytes over %d",
            self.cid,
            self.ip,
            self.port,
            self.config.max_pending,
        )
        transport = self.transport
        if (
            transport is not None
            and not self.tls_pending
            and transport.get_write_buffer_size() < _ROOM_FOR_ERR
        ):
            # room to say why (the session dropped the rest and queued the
            # -ERR), then close once that little is written
            try:
                transport.write(self.session.data_to_send())
            except TRANSPORT_ERRORS:
                self._abort()
                return
            self._cleanup()
            transport.close()
            return
        self._abort()

    # -- keepalive / timers --------------------------------------------------------
    def _schedule_ping(self) -> None:
        interval = self.config.ping_interval_s
        if interval > 0 and not self.closed:
            self._ping_timer = self.loop.call_later(interval, self._ping)

    def _ping(self) -> None:
        self._ping_timer = None
        if self.closed:
            return
        self.session.ping_due()
        self._schedule_ping()

    def _auth_timeout(self) -> None:
        self._auth_timer = None
        if not self.closed:
            self.session.auth_timeout()

    # -- closing -----------------------------------------------------------------
    def close(self) -> None:
        """Close from the server's side: what is queued is written first."""
        self.session.close()

    def _fail(self) -> None:
        """The transport broke: close the session without writing, and abort
        the transport even when the session had closed before (an auth
        timeout during the TLS handshake closes it only gracefully)."""
        self.session.transport_failed()
        self._abort()

    def _abort(self) -> None:
        transport = self.transport
        self._cleanup()
        if transport is not None:
            transport.abort()

    def _cleanup(self) -> None:
        if self.closed:
            return
        self.closed = True
        timers = (
            self._ping_timer, self._auth_timer, self._deadline_timer, self._fallback_timer,
            self._expiry_timer,
        )
        for timer in timers:
            if timer is not None:
                timer.cancel()
        self._ping_timer = self._auth_timer = self._deadline_timer = None
        self._fallback_timer = self._expiry_timer = None
        self.host.connection_closed(self)

    @property
    def pending_bytes(self) -> int:
        return self.session.backlog


def _has_pending_input(transport: asyncio.Transport) -> bool:
    """Whether the peer sent bytes not read yet (peeked on a duplicate of the
    socket's descriptor, so nothing is consumed)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    try:
        with socket.socket(fileno=os.dup(sock.fileno())) as peek:
            return bool(peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True  # broken: let the TLS handshake find out and close
