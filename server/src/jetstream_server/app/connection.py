"""One client connection: bytes in through the sans-IO parser, ops applied to
the broker, bytes out through a batched outbound buffer.

An `asyncio.Protocol`. The connection state is small and explicit:
``expect_connect`` (INFO sent, waiting for CONNECT when auth is required) ->
``connected`` -> ``closed``. TLS (nats-server style: INFO in clear, then the
client upgrades) is done with `loop.start_tls` right after INFO.

Invariants:
- outbound bytes are appended to `_out` and written with one
  `transport.write` per connection per batch, never one write per message:
  connections that got bytes while the server handles one read are flushed
  right after that read; bytes produced elsewhere (timers, services) are
  flushed on the next event-loop turn (`call_soon`);
- pending outbound bytes (our buffer plus the transport's) above
  `max_pending` close the connection with ``-ERR 'Slow Consumer'`` and count
  a slow consumer;
- a protocol error answers ``-ERR '<reason>'`` and closes, as nats-server
  does (bad arguments of a known op close without ``-ERR``, as there); ops
  that came before the error are applied first; an invalid SUB subject
  answers ``-ERR 'Invalid Subject'`` and the connection stays open;
- with TLS, application data decrypted before `start_tls` returns is held
  and processed once the TLS transport is in place;
- a transport that stays paused (buffer over its high-water mark) for
  `write_deadline` is a slow consumer too;
- every PING interval the server pings; more than `max_pings_out`
  unanswered pings close the connection with ``-ERR 'Stale Connection'``.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import ssl
import time
from typing import TYPE_CHECKING, Any, cast

from jetstream_server.app.broker import Broker, Subscription
from jetstream_server.core import protocol as P
from jetstream_server.core.subjects import (
    is_valid_publish_subject,
    is_valid_queue_name,
    is_valid_subject,
)

if TYPE_CHECKING:
    from jetstream_server.app.server import NatsServer

log = logging.getLogger(__name__)

TRANSPORT_ERRORS = (ConnectionError, OSError, ssl.SSLError, asyncio.CancelledError)


def _same(given: str, expected: str) -> bool:
    """Constant-time comparison that also takes non-ASCII text."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())


class ClientConnection(asyncio.Protocol):
    def __init__(self, server: NatsServer, cid: int) -> None:
        self.server = server
        self.broker: Broker = server.broker
        self.config = server.config
        self.cid = cid
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.parser = P.Parser(self.config.max_control_line, self.config.max_payload)
        self.subs: dict[str, Subscription] = {}
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self.closed = False
        self.connected = False
        self.tls_pending = False
        # CONNECT options; nats-server's defaults apply until CONNECT says otherwise
        self.verbose = True
        self.pedantic = True
        self.echo = True
        self.headers = False
        self.no_responders = False
        self.name = ""
        self.lang = ""
        self.version = ""
        self.user: str | None = None
        # stats
        self.in_msgs = 0
        self.in_bytes = 0
        self.out_msgs = 0
        self.out_bytes = 0
        self.pings_out = 0
        self.ip = ""
        self.port = 0
        self.start = time.time()
        self.last_activity = self.start
        self._ping_timer: asyncio.TimerHandle | None = None
        self._auth_timer: asyncio.TimerHandle | None = None
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._tls_task: asyncio.Task[None] | None = None
        self._early: list[bytes] = []
        self._trace = self.config.trace
        self._max_pending = self.config.max_pending

    # -- asyncio.Protocol --------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports quack like asyncio.Transport without subclassing it
        self.transport = cast(asyncio.Transport, transport)
        peer = self.transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.ip, self.port = str(peer[0]), int(peer[1])
        self.server.connection_opened(self)
        info = self.server.info_for(self)
        self.transport.write(P.encode_info(info))
        if self.config.auth.required or self.server.tls_context is not None:
            self._auth_timer = self.loop.call_later(
                self.config.auth_timeout_s + (1.0 if self.server.tls_context else 0.0),
                self._auth_timeout,
            )
        if self.server.tls_context is not None:
            self.tls_pending = True
            self._tls_task = self.loop.create_task(self._upgrade_tls(self.transport))
        self._schedule_ping()

    async def _upgrade_tls(self, transport: asyncio.Transport) -> None:
        ctx = self.server.tls_context
        assert ctx is not None
        try:
            new_transport = await self.loop.start_tls(
                transport, self, ctx, server_side=True, ssl_handshake_timeout=5.0
            )
        except TRANSPORT_ERRORS as exc:
            log.debug("cid=%d TLS handshake failed: %s", self.cid, exc)
            self._abort()
            return
        if new_transport is None or self.closed:
            log.debug("cid=%d closed during the TLS handshake", self.cid)
            self._abort()
            return
        self.transport = new_transport
        self.tls_pending = False
        early, self._early = self._early, []
        for data in early:
            self.data_received(data)
        if self._out:
            self._schedule_flush()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        if self.tls_pending:
            # decrypted bytes that came in with the end of the handshake, before
            # start_tls() handed us the TLS transport: keep them for _upgrade_tls
            self._early.append(data)
            return
        server = self.server
        server.reading = True
        try:
            self._process(data)
        finally:
            server.reading = False
            server.flush_dirty()

    def _process(self, data: bytes) -> None:
        self.last_activity = time.time()
        try:
            ops = self.parser.feed(data)
        except P.ProtocolError as exc:
            # apply what parsed before the error, as nats-server does
            for op in exc.ops:
                if self.closed:
                    return
                self._handle(op)
            log.warning("cid=%d %s:%d protocol error: %s", self.cid, self.ip, self.port, exc)
            if self.closed:
                return
            if exc.silent:
                self.close()
            else:
                self.close_with_error(exc.reason)
            return
        if self._trace or not self.connected:
            for op in ops:
                if self.closed:
                    return
                self._handle(op)
            return
        on_pub = self._on_pub
        for op in ops:
            if self.closed:
                return
            if type(op) is P.Pub:
                on_pub(op)
            else:
                self._handle(op)

    def connection_lost(self, exc: Exception | None) -> None:
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
            log.warning("cid=%d write deadline of %.1fs exceeded", self.cid, self.config.write_deadline_s)
            self._slow_consumer()

    # -- operations ----------------------------------------------------------------
    def _handle(self, op: P.Op) -> None:
        if self._trace:
            log.log(5, "cid=%d <<- %r", self.cid, op)
        if not self.connected and not isinstance(op, P.Connect):
            if self.config.auth.required:
                self.close_with_error(P.ERR_AUTH)
                return
        if isinstance(op, P.Pub):
            self._on_pub(op)
        elif isinstance(op, P.Ping):
            self.send(P.PONG)
        elif isinstance(op, P.Pong):
            self.pings_out = 0
        elif isinstance(op, P.Sub):
            self._on_sub(op)
        elif isinstance(op, P.Unsub):
            self._on_unsub(op)
        elif isinstance(op, P.Connect):
            self._on_connect(op)

    def _on_connect(self, op: P.Connect) -> None:
        opts = op.options
        if not self._authorized(opts):
            log.info("cid=%d authorization violation from %s:%d", self.cid, self.ip, self.port)
            self.close_with_error(P.ERR_AUTH)
            return
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        self.connected = True
        self.verbose = bool(opts.get("verbose", True))
        self.pedantic = bool(opts.get("pedantic", True))
        self.echo = bool(opts.get("echo", True))
        self.headers = bool(opts.get("headers", False))
        self.no_responders = bool(opts.get("no_responders", False))
        self.name = str(opts.get("name") or "")
        self.lang = str(opts.get("lang") or "")
        self.version = str(opts.get("version") or "")
        self.user = opts.get("user") if isinstance(opts.get("user"), str) else None
        if self.no_responders and not self.headers:
            # nats-server refuses no_responders without headers
            self.close_with_error("no responders requires headers support")
            return
        if self.verbose:
            self.send(P.OK)

    def _authorized(self, opts: dict[str, Any]) -> bool:
        auth = self.config.auth
        if not auth.required:
            return True
        if auth.token is not None:
            token = opts.get("auth_token")
            if isinstance(token, str) and _same(token, auth.token):
                return True
        if auth.user is not None:
            user, password = opts.get("user"), opts.get("pass")
            if (
                isinstance(user, str)
                and isinstance(password, str)
                and _same(user, auth.user)
                and _same(password, auth.password or "")
            ):
                return True
        return False

    def _on_pub(self, op: P.Pub) -> None:
        subject, reply, headers, payload = op
        self.in_msgs += 1
        if headers is not None:
            self.in_bytes += len(payload) + len(headers)
            if not self.headers:
                log.warning("cid=%d HPUB without headers support in CONNECT", self.cid)
                self.close()
                return
        else:
            self.in_bytes += len(payload)
        if self.pedantic and not is_valid_publish_subject(subject):
            self.send(P.encode_err(P.ERR_INVALID_PUB_SUBJECT))
            if self.verbose:
                self.send(P.OK)
            return
        if self.verbose:
            self.send(P.OK)
        self.broker.route(subject, reply, headers, payload, self)

    def _on_sub(self, op: P.Sub) -> None:
        if not is_valid_subject(op.subject):
            self.send(P.encode_err(P.ERR_INVALID_SUBJECT))
            return
        if op.queue is not None and not is_valid_queue_name(op.queue):
            self.send(P.encode_err("Invalid Queue Name"))
            return
        if op.sid in self.subs:
            # nats-server ignores a duplicate sid
            if self.verbose:
                self.send(P.OK)
            return
        self.subs[op.sid] = self.broker.add_client_sub(self, op.subject, op.queue, op.sid)
        if self.verbose:
            self.send(P.OK)

    def _on_unsub(self, op: P.Unsub) -> None:
        sub = self.subs.get(op.sid)
        if sub is not None:
            if op.max_msgs is not None and op.max_msgs > sub.delivered:
                sub.max_msgs = op.max_msgs
            else:
                self.broker.remove(sub)
        if self.verbose:
            self.send(P.OK)

    def forget_sub(self, sub: Subscription) -> None:
        if self.subs.get(sub.sid) is sub:
            del self.subs[sub.sid]

    # -- outbound ----------------------------------------------------------------
    def deliver(
        self,
        sub: Subscription,
        subject: bytes,
        reply: bytes | None,
        headers: bytes | None,
        payload: bytes,
    ) -> None:
        if self.closed:
            return
        if headers is not None and self.headers:
            data = P.encode_hmsg(subject, sub.sid_b, reply, headers, payload)
            self.out_bytes += len(headers) + len(payload)
        else:
            data = P.encode_msg(subject, sub.sid_b, reply, payload)
            self.out_bytes += len(payload)
        self.out_msgs += 1
        self._out.append(data)
        self._out_bytes += len(data)
        if self._out_bytes > self._max_pending:
            self._slow_consumer()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self.server.schedule_flush(self)

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        self._out.append(data)
        self._out_bytes += len(data)
        if self._out_bytes > self._max_pending:
            self._slow_consumer()
            return
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.server.schedule_flush(self)

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.server.schedule_flush(self)

    def _flush(self) -> None:
        self._flush_scheduled = False
        transport = self.transport
        if self.closed or transport is None or not self._out or self.tls_pending:
            return
        data = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        self._out_bytes = 0
        try:
            transport.write(data)
        except TRANSPORT_ERRORS as exc:
            log.debug("cid=%d write failed: %s", self.cid, exc)
            self._abort()
            return
        if transport.get_write_buffer_size() > self._max_pending:
            self._slow_consumer()

    def _slow_consumer(self) -> None:
        if self.closed:
            return
        self.server.slow_consumers += 1
        log.warning(
            "cid=%d slow consumer detected (%s:%d), pending bytes over %d",
            self.cid,
            self.ip,
            self.port,
            self.config.max_pending,
        )
        self._out.clear()
        self._out_bytes = 0
        transport = self.transport
        if (
            transport is not None
            and not self.tls_pending
            and transport.get_write_buffer_size() < 65536
        ):
            # room to say why, then close once that little is written
            try:
                transport.write(P.encode_err(P.ERR_SLOW_CONSUMER))
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
        if self.closed:
            return
        if self.pings_out + 1 > self.config.max_pings_out:
            log.debug("cid=%d stale connection", self.cid)
            self.close_with_error(P.ERR_STALE)
            return
        self.pings_out += 1
        self.send(P.PING)
        self._schedule_ping()

    def _auth_timeout(self) -> None:
        self._auth_timer = None
        if not self.connected and not self.closed:
            self.close_with_error(P.ERR_AUTH_TIMEOUT)

    # -- closing -----------------------------------------------------------------
    def close_with_error(self, reason: str) -> None:
        """Send ``-ERR '<reason>'`` after whatever is queued, then close."""
        if self.closed:
            return
        self._out.append(P.encode_err(reason))
        self._flush_now()
        self.close()

    def _flush_now(self) -> None:
        transport = self.transport
        if transport is None or not self._out or self.tls_pending:
            return
        data = b"".join(self._out)
        self._out.clear()
        self._out_bytes = 0
        try:
            transport.write(data)
        except TRANSPORT_ERRORS:
            pass

    def close(self) -> None:
        """Flush what is queued and close gracefully."""
        if self.closed:
            return
        self._flush_now()
        transport = self.transport
        self._cleanup()
        if transport is not None:
            transport.close()

    def _abort(self) -> None:
        transport = self.transport
        self._cleanup()
        if transport is not None:
            transport.abort()

    def _cleanup(self) -> None:
        if self.closed:
            return
        self.closed = True
        for timer in (self._ping_timer, self._auth_timer, self._deadline_timer):
            if timer is not None:
                timer.cancel()
        self._ping_timer = self._auth_timer = self._deadline_timer = None
        for sub in list(self.subs.values()):
            self.broker.remove(sub)
        self.subs.clear()
        self._out.clear()
        self.server.connection_closed(self)

    @property
    def pending_bytes(self) -> int:
        transport = self.transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return self._out_bytes + buffered
