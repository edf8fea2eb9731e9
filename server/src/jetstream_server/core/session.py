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
    EXPECT_CONNECT --AUTH_TIMEOUT--> CLOSED      (CONNECTED ignores a late AUTH_TIMEOUT,
                                                  and so does a session that applied ops
                                                  anonymously)
    CLOSED: final, every event ignored

Ops by state: in EXPECT_CONNECT, CONNECT is authenticated; any other op
closes with ``-ERR 'Authorization Violation'`` when a client without
credentials is refused, and otherwise (no authentication, or a
``no_auth_user``) is applied as that anonymous identity with nats-server's
default options (verbose, pedantic, no headers); the session stays in
EXPECT_CONNECT (a CONNECT may still come) but no longer `awaiting_connect`,
and a later AUTH_TIMEOUT is ignored. When
credentials are required, the first byte a client sends must start a
CONNECT (as nats-server checks): anything else is refused at once, so a
client that has not authenticated can make the session hold at most one
control line (`max_control_line`). In CONNECTED every op is applied. In
CLOSED nothing is.

Permissions (core/permissions.py) of the session's identity are applied to
every PUB (``-ERR 'Permissions Violation for Publish to "<subject>"'``, the
message dropped) and SUB (``-ERR 'Permissions Violation for Subscription to
"<subject>"'``); the connection stays open. Whatever the permissions, a client
may not publish with a reply subject the server reserves for itself (service
import replies ``_R_.``, JetStream acks ``$JS.ACK.``, gateway replies ``_GR_.``:
``-ERR 'Permissions Violation for Publish with Reply of "<reply>"'``), publish
to ``_GR_.`` or (outside the system account) ``$NRG.``, or join the queue
group ``_sys_``, as nats-server refuses them. Publish decisions are cached per
subject (bounded); with ``allow_responses`` the reply subjects of delivered
messages become publishable, counted and timed; a wildcard subscription
that overlaps a subscribe deny filter gets no message the filter denies.
`SessionSettings.max_subscriptions` caps subscriptions (``-ERR 'maximum
subscriptions exceeded'``, the connection stays open); an identity's own
`max_subs` / `max_payload` (a user JWT's ``subs`` / ``payload``) lower the
server's limits for that session.

Accounts: each account has its own broker (its own subject space); the
session publishes and subscribes on the broker of its identity's account,
looked up in `accounts` (the global account's broker is the one given).
When a CONNECT moves the session to another account, its subscriptions
move with it, so a session is never subscribed in two accounts.

Bounded work: a read larger than `OPS_TURN_BYTES` is parsed and applied over
several calls (`holding`, `continue_ops`), each parsing at most that many bytes
and applying about that many protocol bytes of ops; the I/O side stops reading the connection meanwhile, so one client's
256 KiB of SUBs or PUBs never holds the loop for the others.

Invariants:
- ops are applied in order (held ops before those of a later read); the ops
  that parsed before a protocol error are applied first, then the session closes with ``-ERR '<reason>'`` (or
  silently, for bad arguments of a known op, as nats-server does);
- queued output above `SessionSettings.max_pending` bytes closes the session
  as a slow consumer: what was queued is dropped and only
  ``-ERR 'Slow Consumer'`` remains to be written;
- `output_ready()` is called once per batch of output: after the first byte
  queued since the last `data_to_send()`, not for every message;
- a run of messages (`deliver_run`) is queued as one piece: its frames come
  from the run, the slow-consumer check and the statistics are done once;
  only a session whose permissions look at each delivery (deny filters that
  overlap a wildcard subscription, `allow_responses`) takes it message by
  message;
- closing retires every subscription of the session (none gets a message
  from then on; the broker takes them out of its index in bounded turns)
  before `session_closed` is called, and happens once.
"""

from __future__ import annotations

import enum
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from jetstream_server.core import protocol as P
from jetstream_server.core.auth import NO_AUTH, Authenticator, Identity, Refusal, new_nonce
from jetstream_server.core.clock import Clock
from jetstream_server.core.permissions import (
    DENY_CACHE_MAX,
    PUB_CACHE_MAX,
    REPLY_PRUNE_COUNT,
    REPLY_PRUNE_INTERVAL_NS,
    PermissionRules,
    ResponsePermission,
    SubscribeRules,
    prune_oldest,
)
from jetstream_server.core.router import OutboundRun
from jetstream_server.core.routing import Broker, Subscription
from jetstream_server.core.subjects import (
    has_wildcard,
    is_valid_publish_subject,
    is_valid_queue_name,
    is_valid_subject,
)

log = logging.getLogger(__name__)

TRACE: Final = 5  # the log level of -V (protocol trace), below DEBUG
DEFAULT_MAX_PENDING: Final = 64 * 1024 * 1024
DEFAULT_MAX_PINGS_OUT: Final = 2
ERR_NO_RESPONDERS_WITHOUT_HEADERS: Final = "no responders requires headers support"
ERR_MAX_SUBSCRIPTIONS: Final = "maximum subscriptions exceeded"
ERR_MAX_CONNECTIONS: Final = "maximum connections exceeded"
ERR_AUTH_EXPIRED: Final = "User Authentication Expired"
# protocol bytes of ops applied per loop turn: a larger read (asyncio hands up to
# 256 KiB) is applied over several turns, its connection not read meanwhile
OPS_TURN_BYTES: Final = 32 * 1024
_OP_OVERHEAD: Final = 32


def op_cost(op: P.Op) -> int:
    """What an op counts against a turn: about its protocol bytes."""
    if type(op) is P.Pub:
        return len(op.subject) + len(op.payload) + len(op.headers or b"") + _OP_OVERHEAD
    subject = getattr(op, "subject", None)
    return len(subject) + _OP_OVERHEAD if isinstance(subject, str) else _OP_OVERHEAD


def _as_protocol(value: object) -> int:
    """CONNECT's ``protocol`` field (0 when absent or not a number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def go_quote(text: str) -> str:
    """A subject in double quotes with `"` and `\\` escaped, as Go's %q prints it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def pub_violation(subject: str) -> str:
    return f"Permissions Violation for Publish to {go_quote(subject)}"


def reply_violation(reply: str) -> str:
    return f"Permissions Violation for Publish with Reply of {go_quote(reply)}"


# Subjects only the server itself may use (nats-server's client.go): replies of
# service imports (`_R_.`), JetStream acks (`$JS.ACK.`) and gateway-routed replies
# (`_GR_.`) are refused as a client's reply subject, whatever its permissions (a
# client could otherwise answer or ack in another client's or account's place);
# `_GR_.` is refused as a subject too, and `$NRG.` (Raft groups) outside the system
# account; the queue group `_sys_` is refused to client subscriptions.
SERVICE_REPLY_PREFIX: Final = "_R_."
JS_ACK_PREFIX: Final = "$JS.ACK."
GATEWAY_REPLY_PREFIX: Final = "_GR_."
RAFT_PREFIX: Final = "$NRG."
SYSTEM_QUEUE: Final = "_sys_"


_RESERVED_REPLY_PREFIXES: Final = (SERVICE_REPLY_PREFIX, JS_ACK_PREFIX, GATEWAY_REPLY_PREFIX)


def is_reserved_reply(reply: str) -> bool:
    """A reply subject no client may set (nats-server's `isReservedReply`; the
    ack and gateway prefixes need a token after them). One `startswith` for the
    common answer (an `_INBOX.` reply on every JetStream publish is not reserved)."""
    if not reply.startswith(_RESERVED_REPLY_PREFIXES):
        return False
    return reply.startswith(SERVICE_REPLY_PREFIX) or len(reply) > (
        len(JS_ACK_PREFIX) if reply[0] == "$" else len(GATEWAY_REPLY_PREFIX)
    )


def sub_violation(subject: str, queue: str | None) -> str:
    if queue:
        return (
            f"Permissions Violation for Subscription to {go_quote(subject)} "
            f"using queue {go_quote(queue)}"
        )
    return f"Permissions Violation for Subscription to {go_quote(subject)}"


def _lower(server: int, user: int) -> int:
    """The smaller of two limits where <= 0 means none."""
    if user <= 0:
        return server
    return user if server <= 0 else min(server, user)


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
    MAX_CONNECTIONS = "maximum connections exceeded"  # refused right after INFO
    AUTH_EXPIRED = "authentication expired"  # the user JWT ran out


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
    Event.MAX_CONNECTIONS,
    Event.AUTH_EXPIRED,
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

    def buffered_bytes(self) -> int:
        """Bytes taken with `data_to_send()` and not yet sent (the transport's buffer)."""
        ...


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Per-connection limits; the server builds one from its configuration."""

    max_control_line: int = P.MAX_CONTROL_LINE_SIZE
    max_payload: int = P.MAX_PAYLOAD_SIZE
    max_pending: int = DEFAULT_MAX_PENDING
    max_pings_out: int = DEFAULT_MAX_PINGS_OUT
    max_subscriptions: int = 0  # 0: unlimited
    trace: bool = False
    system_account: str | None = None  # may publish to `$NRG.` (None: no account may)


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
        clock: Clock | None = None,
        accounts: Mapping[str, Broker] | None = None,
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
        self._accounts = accounts
        self._io = io
        self._output_ready = io.output_ready
        self._auth = auth
        # a client without credentials is refused: the first byte must start a CONNECT
        self._strict_auth = auth.required and auth.anonymous is None
        self._now_ns: Callable[[], int] = clock.now_ns if clock is not None else time.time_ns
        self.nonce = ""
        self.parser = P.Parser(settings.max_control_line, settings.max_payload)
        self.last_ops: list[P.Op] = []  # the ops of the latest read
        self._held: deque[P.Op] = deque()  # ops of a large read not yet applied
        self._unparsed = bytearray()  # bytes of a large read not yet parsed
        self._held_error: P.ProtocolError | None = None
        self.subs: dict[str, Subscription] = {}
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._signalled = False
        self._max_pending = settings.max_pending
        self._max_pings_out = settings.max_pings_out
        self._max_subs = settings.max_subscriptions
        self._server_max_subs = settings.max_subscriptions
        self._server_max_payload = settings.max_payload
        self._trace = settings.trace
        self._system_account = settings.system_account
        # permissions of the identity (None: unrestricted); see _set_identity
        self._rules: PermissionRules | None = None
        self._pub_cache: dict[str, bool] | None = None
        self._sub_rules: SubscribeRules | None = None
        self._deny_cache: dict[tuple[bytes, str | None], bool] | None = None
        self._responses: ResponsePermission | None = None
        self._replies: dict[str, list[int]] | None = None
        self._replies_since_prune = 0
        self._last_reply_prune_ns = 0
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
        self.async_info = False  # CONNECT's protocol >= 1: takes asynchronous INFO
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

    @property
    def backlog(self) -> int:
        """Bytes on their way to the client: queued here, or written and not yet sent."""
        return self._out_bytes + self._io.buffered_bytes()

    # -- input from the I/O side ---------------------------------------------------
    def greeting(self, info: Mapping[str, Any]) -> bytes:
        """The ``INFO`` that opens the connection; written at once, before TLS.
        Carries a fresh nonce when the authenticator needs one (NKeys)."""
        info = dict(info)
        if self._auth.nonce_required:
            self.nonce = new_nonce()
            info["nonce"] = self.nonce
        return P.encode_info(info)

    def receive_data(self, data: bytes) -> None:
        """Parse what the client sent and apply its complete ops: all of them when
        the read is small, else `OPS_TURN_BYTES` worth and the rest held
        (`holding`) for `continue_ops` on later turns."""
        if self.closed:
            return
        if self._held_error is not None:
            return  # the read before ended in a protocol error: nothing after it counts
        if (
            self._strict_auth
            and self.state is State.EXPECT_CONNECT
            and data
            and not self.holding
            and not self.parser.buffered
            and data[:1] not in (b"C", b"c")
        ):
            # nats-server refuses anything but CONNECT as the first op at its
            # first byte; nothing of it is buffered
            self._close(Event.AUTH_VIOLATION, P.ERR_AUTH)
            return
        if self.holding or len(data) > OPS_TURN_BYTES:
            # parsed and applied OPS_TURN_BYTES at a time, over as many turns as it takes
            self._unparsed += data
            self.continue_ops()
            return
        try:
            ops = self.last_ops = self.parser.feed(data)  # (named by the loop watchdog)
        except P.ProtocolError as exc:
            # apply what parsed before the error, as nats-server does, then close
            self._held.extend(exc.ops)
            self._held_error = exc
            self.continue_ops()
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

    @property
    def holding(self) -> bool:
        """Bytes or ops of an earlier read wait for `continue_ops` (the I/O side
        stops reading meanwhile)."""
        return bool(self._held) or bool(self._unparsed) or self._held_error is not None

    def continue_ops(self) -> None:
        """One turn's share of held work: parse at most `OPS_TURN_BYTES` of held
        bytes, apply held ops worth `OPS_TURN_BYTES` (at least one); once nothing is
        left, the protocol error that ended them."""
        held = self._held
        budget = OPS_TURN_BYTES
        parsed = False
        while budget > 0 and not self.closed:
            if not held:
                if parsed or not self._unparsed:
                    break
                chunk = bytes(self._unparsed[:OPS_TURN_BYTES])
                del self._unparsed[:OPS_TURN_BYTES]
                parsed = True
                try:
                    self.last_ops = ops = self.parser.feed(chunk)
                except P.ProtocolError as exc:
                    ops = exc.ops
                    self._held_error = exc
                    self._unparsed.clear()
                held.extend(ops)
                continue
            op = held.popleft()
            if self._fast and type(op) is P.Pub:
                self._on_pub(op)
            else:
                self._handle(op)
            budget -= op_cost(op)
        if self.closed:
            held.clear()
            self._unparsed.clear()
            return
        if held or self._unparsed:
            return
        error, self._held_error = self._held_error, None
        if error is not None:
            log.warning("cid=%d %s:%d protocol error: %s", self.cid, self.ip, self.port, error)
            self._close(Event.PROTOCOL_ERROR, None if error.silent else error.reason)

    def send_info(self, info: Mapping[str, Any]) -> None:
        """An asynchronous ``INFO`` (lame duck mode, ...), sent as nats-server
        sends it: only to a connected client that declared ``protocol >= 1``."""
        if self.state is State.CONNECTED and self.async_info:
            self.send(P.encode_info(dict(info)))

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
        """The time to CONNECT is up (ignored once connected or, without
        credentials required, once an op was applied anonymously)."""
        if self.awaiting_connect:
            self._close(Event.AUTH_TIMEOUT, P.ERR_AUTH_TIMEOUT)

    @property
    def awaiting_connect(self) -> bool:
        """No CONNECT accepted and no op applied yet: the auth timer runs."""
        return self.state is State.EXPECT_CONNECT and self.identity is None

    def slow_consumer(self) -> None:
        """The I/O side cannot get our bytes out (buffer over `max_pending`, or
        a transport that stayed paused past the write deadline)."""
        self._close(Event.SLOW_CONSUMER, P.ERR_SLOW_CONSUMER)

    def max_connections_exceeded(self) -> None:
        """The server is at `max_connections`: refuse this client after its INFO."""
        self._close(Event.MAX_CONNECTIONS, ERR_MAX_CONNECTIONS)

    def auth_expired(self) -> None:
        """The identity's credentials ran out (`Identity.expires`): close, as
        nats-server does, with ``-ERR 'User Authentication Expired'``."""
        self._close(Event.AUTH_EXPIRED, ERR_AUTH_EXPIRED)

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
        if self._deny_cache is not None and self._delivery_denied(subject, sub.queue):
            return
        if self._replies is not None and reply:
            self._track_reply(reply)
        if headers is not None and self.headers:
            data = P.encode_hmsg(subject, sub.sid_b, reply, headers, payload)
            self.out_bytes += len(headers) + len(payload)
        else:
            data = P.encode_msg(subject, sub.sid_b, reply, payload)
            self.out_bytes += len(payload)
        self.out_msgs += 1
        # `send`'s queueing, inlined: this runs once per delivered message
        self._out.append(data)
        self._out_bytes += len(data)
        if self._out_bytes > self._max_pending:
            self._close(Event.SLOW_CONSUMER, P.ERR_SLOW_CONSUMER)
        elif not self._signalled:
            self._signalled = True
            self._output_ready()

    def deliver_run(self, sub: Subscription, run: OutboundRun) -> None:
        if self.closed:
            return
        if self._deny_cache is not None or self._replies is not None:
            # permissions that look at every delivery: one by one
            for subject, reply, headers, payload in run.messages():
                self.deliver(
                    sub,
                    subject.encode("utf-8", "surrogateescape"),
                    reply.encode("utf-8", "surrogateescape") if reply else None,
                    headers,
                    payload,
                )
            return
        data, carried = run.encode(sub.sid_b, self.headers)
        if not data:
            return
        self.out_msgs += len(run)
        self.out_bytes += carried
        self.send(data)

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
        if self.state is State.EXPECT_CONNECT:
            anonymous = self._auth.anonymous
            if anonymous is None:
                self._close(Event.AUTH_VIOLATION, P.ERR_AUTH)
                return
            if self.identity is None:
                # no authentication (or a no_auth_user): the op is applied as
                # that identity, with the default options
                self._set_identity(anonymous)
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
        result = self._auth.authenticate(opts, self.nonce.encode())
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
        self._set_identity(result)
        self.verbose = bool(opts.get("verbose", True))
        self.pedantic = bool(opts.get("pedantic", True))
        self.echo = bool(opts.get("echo", True))
        self.headers = bool(opts.get("headers", False))
        self.no_responders = bool(opts.get("no_responders", False))
        self.name = str(opts.get("name") or "")
        self.lang = str(opts.get("lang") or "")
        self.version = str(opts.get("version") or "")
        self.async_info = _as_protocol(opts.get("protocol")) >= 1
        if self.no_responders and not self.headers:
            # nats-server refuses no_responders without headers
            self._close(Event.CONNECT_REFUSED, ERR_NO_RESPONDERS_WITHOUT_HEADERS)
            return
        if self.verbose:
            self.send(P.OK)

    def _on_pub(self, op: P.Pub) -> None:
        subject, reply, headers, payload = op.subject, op.reply, op.headers, op.payload
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
        # the order of nats-server's checks: gateway subject, permissions, Raft
        # subject, reserved reply (the first two characters decide cheaply)
        reserved_subject = subject[:1] in ("_", "$")
        if (
            reserved_subject
            and len(subject) > len(GATEWAY_REPLY_PREFIX)
            and subject.startswith(GATEWAY_REPLY_PREFIX)
        ):
            self._refuse_publish(subject)
            return
        cache = self._pub_cache
        if cache is not None:
            allowed = cache.get(subject)
            if allowed is None:
                allowed = self._publish_decision(subject, cache)
            if not allowed:
                self._refuse_publish(subject)
                return
        if (
            reserved_subject
            and subject.startswith(RAFT_PREFIX)
            and (self.identity is None or self.identity.account != self._system_account)
        ):
            self._refuse_publish(subject)
            return
        if reply and reply[:1] in ("_", "$") and is_reserved_reply(reply):
            log.error("cid=%d Publish Violation - Reply %s", self.cid, go_quote(reply))
            self.send(P.encode_err(reply_violation(reply)))
            return
        if self.verbose:
            self.send(P.OK)
        self._route(subject, reply, headers, payload, self)

    def _refuse_publish(self, subject: str) -> None:
        log.error("cid=%d Publish Violation - Subject %s", self.cid, go_quote(subject))
        self.send(P.encode_err(pub_violation(subject)))

    def _on_sub(self, op: P.Sub) -> None:
        if not is_valid_subject(op.subject):
            self.send(P.encode_err(P.ERR_INVALID_SUBJECT))
            return
        if op.queue is not None and not is_valid_queue_name(op.queue):
            self.send(P.encode_err(P.ERR_INVALID_QUEUE))
            return
        if op.queue == SYSTEM_QUEUE:
            self._refuse_subscription(op)
            return
        rules = self._sub_rules
        if rules is not None:
            if not rules.allowed(op.subject, op.queue):
                self._refuse_subscription(op)
                return
            if (
                self._deny_cache is None
                and (op.queue or has_wildcard(op.subject))
                and rules.deny_collides(op.subject)
            ):
                # deliveries from now on are checked against the deny filters
                self._deny_cache = {}
        if self._max_subs > 0 and len(self.subs) >= self._max_subs:
            log.error("cid=%d %s", self.cid, ERR_MAX_SUBSCRIPTIONS)
            self.send(P.encode_err(ERR_MAX_SUBSCRIPTIONS))
            return
        if op.sid in self.subs:
            # nats-server ignores a duplicate sid
            if self.verbose:
                self.send(P.OK)
            return
        self.subs[op.sid] = self._broker.add_client_sub(self, op.subject, op.queue, op.sid)
        if self.verbose:
            self.send(P.OK)

    def _refuse_subscription(self, op: P.Sub) -> None:
        log.error(
            "cid=%d Subscription Violation - Subject %s, SID %s",
            self.cid,
            go_quote(op.subject),
            op.sid,
        )
        self.send(P.encode_err(sub_violation(op.subject, op.queue)))

    def _on_unsub(self, op: P.Unsub) -> None:
        sub = self.subs.get(op.sid)
        if sub is not None:
            if op.max_msgs is not None and op.max_msgs > sub.delivered:
                sub.max_msgs = op.max_msgs
            else:
                self._broker.remove(sub)
        if self.verbose:
            self.send(P.OK)

    # -- permissions -----------------------------------------------------------------------
    def _set_identity(self, identity: Identity) -> None:
        """Take `identity`, its account's broker and its permissions (compiled
        once per distinct set)."""
        self.identity = identity
        # a user's own limits (user JWTs) apply below the server's
        self._max_subs = _lower(self._server_max_subs, identity.max_subs)
        self.parser.max_payload = _lower(self._server_max_payload, identity.max_payload)
        if self._accounts is not None:
            broker = self._accounts.get(identity.account)
            if broker is not None and broker is not self._broker:
                self._move_to(broker)
        perms = identity.permissions
        rules = PermissionRules.of(perms) if perms is not None else None
        self._rules = rules
        self._pub_cache = {} if rules is not None and rules.restricts_publish else None
        self._sub_rules = rules.sub if rules is not None else None
        self._deny_cache = None
        self._responses = rules.responses if rules is not None else None
        self._replies = {} if self._responses is not None else None

    def _move_to(self, broker: Broker) -> None:
        old = self._broker
        self._broker = broker
        self._route = broker.route
        for sid, sub in list(self.subs.items()):
            old.remove(sub)
            moved = broker.add_client_sub(self, sub.subject, sub.queue, sid)
            moved.max_msgs, moved.delivered = sub.max_msgs, sub.delivered
            self.subs[sid] = moved

    def _publish_decision(self, subject: str, cache: dict[str, bool]) -> bool:
        """Allow and deny lists (cached), then tracked replies (never cached)."""
        rules = self._rules
        assert rules is not None
        allowed = rules.publish_allowed(subject)
        if not allowed and self._replies is not None:
            return self._response_allowed(subject)
        cache[subject] = allowed
        if len(cache) > PUB_CACHE_MAX:
            prune_oldest(cache)
        return allowed

    def _response_allowed(self, subject: str) -> bool:
        replies = self._replies
        resp = self._responses
        assert replies is not None and resp is not None
        entry = replies.get(subject)
        if entry is None:
            return False
        entry[1] += 1
        if resp.max_msgs > 0 and entry[1] > resp.max_msgs:
            del replies[subject]
            return False
        if resp.expires_s > 0 and self._now_ns() - entry[0] > resp.expires_s * 1e9:
            del replies[subject]
            return False
        return True

    def _track_reply(self, reply: bytes) -> None:
        """A delivered message's reply subject becomes publishable (allow_responses)."""
        replies = self._replies
        rules = self._rules
        assert replies is not None and rules is not None
        subject = reply.decode("utf-8", "surrogateescape")
        if rules.publish_allowed(subject):
            return
        now = self._now_ns()
        replies[subject] = [now, 0]
        self._replies_since_prune += 1
        if (
            self._replies_since_prune > REPLY_PRUNE_COUNT
            or now - self._last_reply_prune_ns > REPLY_PRUNE_INTERVAL_NS
        ):
            self._prune_replies(now)

    def _prune_replies(self, now: int) -> None:
        replies = self._replies
        resp = self._responses
        assert replies is not None and resp is not None
        max_msgs = resp.max_msgs
        ttl_ns = resp.expires_s * 1e9
        for key, (started, count) in list(replies.items()):
            if (max_msgs > 0 and count >= max_msgs) or (ttl_ns > 0 and now - started > ttl_ns):
                del replies[key]
        self._replies_since_prune = 0
        self._last_reply_prune_ns = now

    def _delivery_denied(self, subject: bytes, queue: str | None) -> bool:
        cache = self._deny_cache
        rules = self._sub_rules
        assert cache is not None and rules is not None
        key = (subject, queue)
        denied = cache.get(key)
        if denied is None:
            denied = rules.delivery_denied(subject.decode("utf-8", "surrogateescape"), queue)
            cache[key] = denied
            if len(cache) > DENY_CACHE_MAX:
                prune_oldest(cache)
        return denied

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
        # closed at once, out of the index over the next turns (the broker's)
        self._broker.retire(self.subs.values())
        self.subs.clear()
        self._io.session_closed(close)
