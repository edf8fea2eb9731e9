"""One client's session, sans-IO: bytes in, ops applied, bytes out, a close decision.

The asyncio layer (`jetstream_server.app.connection`) owns the socket and the
timers; a `Session` owns everything the protocol decides. It is fed what the
client sent (`receive_data`) and what the clock decided (`ping_due`,
`auth_timeout`) or the transport reported (`slow_consumer`,
`transport_lost`, `transport_failed`); it answers by queueing bytes
(``+OK``, ``-ERR``, ``PONG``, ``PING``, ``MSG``/``HMSG``), which the I/O side
takes with `data_to_send()`, and by closing. It reaches the I/O side only
through the two calls of `SessionIO`: `output_ready()` (bytes are waiting;
write them soon) and `session_closed(close)` (the session is over; `close`
says why and whether the queued bytes are to be written). No asyncio, no
sockets, no clock: time arrives as events.

States (`TRANSITIONS` is the whole table; an event a state has no row for
changes nothing):

    EXPECT_CONNECT --CONNECT_ACCEPTED--> CONNECTED --CONNECT_ACCEPTED--> CONNECTED
    EXPECT_CONNECT, CONNECTED --any closing event--> CLOSED
    EXPECT_CONNECT --AUTH_TIMEOUT--> CLOSED      (CONNECTED ignores a late AUTH_TIMEOUT)
    CLOSED: final, every event ignored

Ops by state: in EXPECT_CONNECT, CONNECT is authenticated; any other op
closes with ``-ERR 'Authorization Violation'`` when authentication is
required, and is applied with nats-server's default options (verbose,
pedantic, no headers) when it is not. In CONNECTED every op is applied. In
CLOSED nothing is.

Invariants:
- ops are applied in order; the ops that parsed before a protocol error are
  applied first, then the session closes with ``-ERR '<reason>'`` (or
  silently, for bad arguments of a known op, as nats-server does);
- queued output above `SessionSettings.max_pending` bytes closes the session
  as a slow consumer: what was queued is dropped and only
  ``-ERR 'Slow Consumer'`` remains to be written;
- `output_ready()` is called once per batch of output: after the first byte
  queued since the last `data_to_send()`, not for every message;
- closing removes every subscription of the session from the broker before
  `session_closed` is called, and happens once.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from jetstream_server.core import protocol as P
from jetstream_server.core.auth import NO_AUTH, Authenticator, Identity, Refusal
from jetstream_server.core.routing import Broker, Subscription
from jetstream_server.core.subjects import (
    is_valid_publish_subject,
    is_valid_queue_name,
    is_valid_subject,
)

log = logging.getLogger(__name__)

TRACE: Final = 5  # the log level of -V (protocol trace), below DEBUG
DEFAULT_MAX_PENDING: Final = 64 * 1024 * 1024
DEFAULT_MAX_PINGS_OUT: Final = 2
ERR_NO_RESPONDERS_WITHOUT_HEADERS: Final = "no responders requires headers support"


class State(enum.Enum):
    EXPECT_CONNECT = "expect_connect"
    CONNECTED = "connected"
    CLOSED = "closed"


class Event(enum.Enum):
    """What moves a session from one state to another."""

    CONNECT_ACCEPTED = "connect accepted"
    AUTH_VIOLATION = "authorization violation"  # refused CONNECT, or an op before CONNECT
    CONNECT_REFUSED = "connect refused"  # options that cannot be honoured
    PROTOCOL_ERROR = "protocol error"
    AUTH_TIMEOUT = "authentication timeout"
    STALE = "stale connection"
    SLOW_CONSUMER = "slow consumer"
    SHUTDOWN = "server shutdown"
    TRANSPORT_LOST = "transport lost"  # the peer went away; nothing can be written
    TRANSPORT_FAILED = "transport failed"  # a write or the TLS handshake failed


_OPEN: Final = (State.EXPECT_CONNECT, State.CONNECTED)
_CLOSING: Final = (
    Event.AUTH_VIOLATION,
    Event.CONNECT_REFUSED,
    Event.PROTOCOL_ERROR,
    Event.STALE,
    Event.SLOW_CONSUMER,
    Event.SHUTDOWN,
    Event.TRANSPORT_LOST,
    Event.TRANSPORT_FAILED,
)

TRANSITIONS: Final[Mapping[tuple[State, Event], State]] = {
    (State.EXPECT_CONNECT, Event.CONNECT_ACCEPTED): State.CONNECTED,
    # a second CONNECT is authenticated again and its options replace the first's
    (State.CONNECTED, Event.CONNECT_ACCEPTED): State.CONNECTED,
    (State.EXPECT_CONNECT, Event.AUTH_TIMEOUT): State.CLOSED,
    **{(state, event): State.CLOSED for state in _OPEN for event in _CLOSING},
}

# closes after which nothing queued is written: the transport is gone or
# broken, or (slow consumer) the queue is exactly what could not be written
DROPS_OUTPUT: Final = frozenset(
    {Event.SLOW_CONSUMER, Event.TRANSPORT_LOST, Event.TRANSPORT_FAILED}
)


@dataclass(frozen=True, slots=True)
class Close:
    """Why a session closed. `error` is the ``-ERR`` reason queued as the last
    output (None: closed without one); with `drop_output` nothing else that
    was queued is to be written."""

    event: Event
    error: str | None = None

    @property
    def drop_output(self) -> bool:
        return self.event in DROPS_OUTPUT


class SessionIO(Protocol):
    """The I/O side of a session (the asyncio connection implements it)."""

    def output_ready(self) -> None:
        """Bytes are queued: take them with `Session.data_to_send()` soon."""
        ...

    def session_closed(self, close: Close) -> None:
        """The session is over: write what `data_to_send()` holds (unless
        `close.drop_output`), then close the transport."""
        ...


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Per-connection limits; the server builds one from its configuration."""

    max_control_line: int = P.MAX_CONTROL_LINE_SIZE
    max_payload: int = P.MAX_PAYLOAD_SIZE
    max_pending: int = DEFAULT_MAX_PENDING
    max_pings_out: int = DEFAULT_MAX_PINGS_OUT
    trace: bool = False


class Session:
    """The protocol state of one client connection. Implements the broker's
    `Subscriber`: deliveries are queued as ``MSG``/``HMSG`` here."""

    def __init__(
        self,
        cid: int,
        broker: Broker,
        io: SessionIO,
        settings: SessionSettings = SessionSettings(),
        auth: Authenticator = NO_AUTH,
    ) -> None:
        self.cid = cid
        self.ip = ""
        self.port = 0
        self.state = State.EXPECT_CONNECT
        # `closed` mirrors `state is CLOSED` and `_fast` "CONNECTED and not
        # tracing": one attribute load each on the hot paths
        self.closed = False
        self._fast = False
        self._broker = broker
        self._route = broker.route
        self._io = io
        self._output_ready = io.output_ready
        self._auth = auth
        self._auth_required = auth.required
        self.parser = P.Parser(settings.max_control_line, settings.max_payload)
        self.subs: dict[str, Subscription] = {}
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._signalled = False
        self._max_pending = settings.max_pending
        self._max_pings_out = settings.max_pings_out
        self._trace = settings.trace
        self.close_reason: Close | None = None
        # CONNECT options; nats-server's defaults apply until CONNECT says otherwise
        self.identity: Identity | None = None
        self.verbose = True
        self.pedantic = True
        self.echo = True
        self.headers = False
        self.no_responders = False
        self.name = ""
        self.lang = ""
        self.version = ""
        # stats
        self.in_msgs = 0
        self.in_bytes = 0
        self.out_msgs = 0
        self.out_bytes = 0
        self.pings_out = 0

    def __repr__(self) -> str:
        return f"Session(cid={self.cid}, {self.state.value})"

    @property
    def user(self) -> str | None:
        """The name monitoring shows as ``authorized_user``."""
        return self.identity.user if self.identity is not None else None

    @property
    def pending_output(self) -> int:
        """Bytes queued and not yet taken by `data_to_send()`."""
        return self._out_bytes

    # -- input from the I/O side ---------------------------------------------------
    def greeting(self, info: Mapping[str, Any]) -> bytes:
        """The ``INFO`` that opens the connection; written at once, before TLS."""
        return P.encode_info(dict(info))

    def receive_data(self, data: bytes) -> None:
        """Parse what the client sent and apply every complete op."""
        if self.closed:
            return
        try:
            ops = self.parser.feed(data)
        except P.ProtocolError as exc:
            # apply what parsed before the error, as nats-server does
            for op in exc.ops:
                if self.closed:
                    return
                self._handle(op)
            if self.closed:
                return
            log.warning("cid=%d %s:%d protocol error: %s", self.cid, self.ip, self.port, exc)
            self._close(Event.PROTOCOL_ERROR, None if exc.silent else exc.reason)
            return
        if not self._fast:
            for op in ops:
                if self.closed:
                    return
                self._handle(op)
            return
        # the hot path: a connected session publishing
        on_pub = self._on_pub
        handle = self._handle
        for op in ops:
            if self.closed:
                return
            if type(op) is P.Pub:
                on_pub(op)
            else:
                handle(op)

    def ping_due(self) -> None:
        """The ping interval passed: ping, or close a connection that stopped answering."""
        if self.closed:
            return
        if self.pings_out + 1 > self._max_pings_out:
            log.debug("cid=%d stale connection", self.cid)
            self._close(Event.STALE, P.ERR_STALE)
            return
        self.pings_out += 1
        self.send(P.PING)

    def auth_timeout(self) -> None:
        """The time to CONNECT is up (ignored once connected)."""
        self._close(Event.AUTH_TIMEOUT, P.ERR_AUTH_TIMEOUT)

    def slow_consumer(self) -> None:
        """The I/O side cannot get our bytes out (buffer over `max_pending`, or
        a transport that stayed paused past the write deadline)."""
        self._close(Event.SLOW_CONSUMER, P.ERR_SLOW_CONSUMER)

    def close(self) -> None:
        """The server closes the connection: what is queued is written first."""
        self._close(Event.SHUTDOWN, None)

    def transport_lost(self) -> None:
        self._close(Event.TRANSPORT_LOST, None)

    def transport_failed(self) -> None:
        self._close(Event.TRANSPORT_FAILED, None)

    # -- output to the I/O side --------------------------------------------------------
    def data_to_send(self) -> bytes:
        """Everything queued, as one bytes object (b"" when nothing is)."""
        self._signalled = False
        out = self._out
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        self._out_bytes = 0
        return data

    def send(self, data: bytes) -> None:
        """Queue protocol bytes for the client."""
        if self.closed:
            return
        self._out.append(data)
        self._out_bytes += len(data)
        if self._out_bytes > self._max_pending:
            self._close(Event.SLOW_CONSUMER, P.ERR_SLOW_CONSUMER)
        elif not self._signalled:
            self._signalled = True
            self._output_ready()

    # -- Subscriber (called by the broker) ---------------------------------------------
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
            self._close(Event.SLOW_CONSUMER, P.ERR_SLOW_CONSUMER)
        elif not self._signalled:
            self._signalled = True
            self._output_ready()

    def forget_sub(self, sub: Subscription) -> None:
        if self.subs.get(sub.sid) is sub:
            del self.subs[sub.sid]

    # -- ops ---------------------------------------------------------------------------
    def _handle(self, op: P.Op) -> None:
        if self._trace:
            log.log(TRACE, "cid=%d <<- %r", self.cid, op)
        if type(op) is P.Connect:
            self._on_connect(op)
            return
        if self.state is State.EXPECT_CONNECT and self._auth_required:
            self._close(Event.AUTH_VIOLATION, P.ERR_AUTH)
            return
        if type(op) is P.Pub:
            self._on_pub(op)
        elif type(op) is P.Ping:
            self.send(P.PONG)
        elif type(op) is P.Pong:
            self.pings_out = 0
        elif type(op) is P.Sub:
            self._on_sub(op)
        elif type(op) is P.Unsub:
            self._on_unsub(op)

    def _on_connect(self, op: P.Connect) -> None:
        opts = op.options
        result = self._auth.authenticate(opts)
        if isinstance(result, Refusal):
            log.info(
                "cid=%d authorization violation from %s:%d (%s)",
                self.cid,
                self.ip,
                self.port,
                result.reason,
            )
            self._close(Event.AUTH_VIOLATION, P.ERR_AUTH)
            return
        self._transition(Event.CONNECT_ACCEPTED)
        self.identity = result
        self.verbose = bool(opts.get("verbose", True))
        self.pedantic = bool(opts.get("pedantic", True))
        self.echo = bool(opts.get("echo", True))
        self.headers = bool(opts.get("headers", False))
        self.no_responders = bool(opts.get("no_responders", False))
        self.name = str(opts.get("name") or "")
        self.lang = str(opts.get("lang") or "")
        self.version = str(opts.get("version") or "")
        if self.no_responders and not self.headers:
            # nats-server refuses no_responders without headers
            self._close(Event.CONNECT_REFUSED, ERR_NO_RESPONDERS_WITHOUT_HEADERS)
            return
        if self.verbose:
            self.send(P.OK)

    def _on_pub(self, op: P.Pub) -> None:
        subject, reply, headers, payload = op
        self.in_msgs += 1
        if headers is not None:
            self.in_bytes += len(payload) + len(headers)
            if not self.headers:
                log.warning("cid=%d HPUB without headers support in CONNECT", self.cid)
                self._close(Event.PROTOCOL_ERROR, None)
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
        self._route(subject, reply, headers, payload, self)

    def _on_sub(self, op: P.Sub) -> None:
        if not is_valid_subject(op.subject):
            self.send(P.encode_err(P.ERR_INVALID_SUBJECT))
            return
        if op.queue is not None and not is_valid_queue_name(op.queue):
            self.send(P.encode_err(P.ERR_INVALID_QUEUE))
            return
        if op.sid in self.subs:
            # nats-server ignores a duplicate sid
            if self.verbose:
                self.send(P.OK)
            return
        self.subs[op.sid] = self._broker.add_client_sub(self, op.subject, op.queue, op.sid)
        if self.verbose:
            self.send(P.OK)

    def _on_unsub(self, op: P.Unsub) -> None:
        sub = self.subs.get(op.sid)
        if sub is not None:
            if op.max_msgs is not None and op.max_msgs > sub.delivered:
                sub.max_msgs = op.max_msgs
            else:
                self._broker.remove(sub)
        if self.verbose:
            self.send(P.OK)

    # -- state ---------------------------------------------------------------------------
    def _transition(self, event: Event) -> bool:
        """Apply `event` by the table; False when this state has no row for it."""
        new = TRANSITIONS.get((self.state, event))
        if new is None:
            return False
        if self._trace and new is not self.state:
            log.log(TRACE, "cid=%d %s -> %s on %s", self.cid, self.state.value, new.value, event.value)
        self.state = new
        self.closed = new is State.CLOSED
        self._fast = new is State.CONNECTED and not self._trace
        return True

    def _close(self, event: Event, error: str | None) -> None:
        if not self._transition(event):
            return
        close = Close(event, error)
        self.close_reason = close
        if close.drop_output:
            self._out.clear()
            self._out_bytes = 0
        if error is not None:
            data = P.encode_err(error)
            self._out.append(data)
            self._out_bytes += len(data)
        broker = self._broker
        for sub in list(self.subs.values()):
            broker.remove(sub)
        self.subs.clear()
        self._io.session_closed(close)
