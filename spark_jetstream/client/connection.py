"""A lean, blocking NATS connection for Spark executors (and the driver's API calls).

Why not nats-py: executors run plain synchronous Python, and nats-py's
per-message asyncio callbacks cap a read at ~15-110k msg/s. This connection
keeps one raw socket, reads large chunks and parses frames in bulk
(frames.py), which is what lets a read stream a whole sequence range fast
(read/fetch.py).

- Connection + handshake (`LeanConnection.connect`: one pass over the server
  list in random order; `open`/`reconnect`: passes retried within
  `retryTimeout`): INFO, optional TLS upgrade, CONNECT (headers,
  no_responders, the credentials of `auth.py`), PING/PONG round trip; `-ERR`
  raises `ServerError`.
- Reading and writing frames: `read_frames()` feeds the parser from the
  socket and answers PINGs; `publish()`, `subscribe()`, `send()`, `flush()`
  write.
- Requests and the JetStream API (`request()`, `js_api()`), on one wildcard
  inbox subscription under the `inboxPrefix` option; every API subject is
  built by `api_subject()` (the `domain` / `apiPrefix` options). `js_api`
  retries transient failures (retry.py), reconnecting when needed.

Invariants: a connection is used by one thread at a time (the pool, pool.py,
hands it to one user); it is opened inside `read()`/`write()` on the
executor, never pickled. A write that fails marks the connection broken (half
a frame may be on the wire): it is never reused. Any protocol or server error
raises (`NatsError` and subclasses, in `errors.py`, with the server's codes as
`ErrorCode` / `Status`); nothing is silently dropped. Messages name servers
by their redacted URL (`server_url`): no password or token appears in an
error text or a log line. Imports no pyspark and no pyarrow: the driver's API
calls and the executors' reads and writes share it.
"""

from __future__ import annotations

import json
import logging
import random
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from spark_jetstream.client.auth import connect_fields, ssl_context
from spark_jetstream.client.errors import (
    FIRST_ERROR_STATUS,
    ConnectionLostError,
    JetStreamApiError,
    JetStreamUnavailableError,
    NatsError,
    NatsTimeoutError,
    NoRespondersError,
    ServerError,
    Status,
)
from spark_jetstream.client.frames import CRLF, Frame, parse_frames, parse_headers
from spark_jetstream.client.retry import RetryBudget, breaks_connection, exhausted, is_transient
from spark_jetstream.options.connection import ConnectionOptions
from spark_jetstream.options.secrets import redact_text, redact_url

__all__ = ["CLIENT_NAME", "HEALTH_CHECK_S", "LeanConnection", "ServerInfo", "ssl_context"]

log = logging.getLogger(__name__)

RECV_SIZE = 4 * 1024 * 1024
VERSION = "0.1.0"
CLIENT_NAME = "spark-jetstream"  # the connection name servers show (connz), to tell ours apart
HEALTH_CHECK_S = 2.0  # longest PING/PONG wait before a connection counts as dead
_RNG = random.Random()  # server order; tests pass their own

def permission_hint(text: str) -> str:
    """What a permissions violation means for the connector ("" for any other error)."""
    if "permissions violation" not in text.lower():
        return ""
    if "subscription" in text.lower():
        return " (the user may not subscribe to the connector's reply subjects: see option inboxPrefix)"
    if ".CONSUMER.CREATE." in text or ".CONSUMER.DELETE." in text:
        return (
            " (the user may not create consumers on the stream: a read-only user reads with option "
            "readMode=direct, or through a consumer an operator made with option consumer; see "
            "docs/permissions.md)"
        )
    if "$JS.ACK." in text:
        return (
            " (the user may not acknowledge the consumer's messages: option consumer needs "
            "$JS.ACK.<stream>.<consumer>.>; see docs/permissions.md)"
        )
    return " (the user lacks this right; see docs/permissions.md for what each mode needs)"


@dataclass(frozen=True, slots=True)
class ServerInfo:
    raw: dict[str, Any]

    @property
    def max_payload(self) -> int:
        return int(self.raw.get("max_payload", 1024 * 1024))

    @property
    def headers(self) -> bool:
        return bool(self.raw.get("headers", False))


class LeanConnection:
    """One blocking connection to a NATS server. Not thread-safe.

    `connect` makes one pass over the server list (in random order, as the
    NATS clients do) and fails when no server takes the connection; `open`
    retries such passes within `retryTimeout`; `reconnect` replaces a broken
    socket in place (same object, same subscriptions), so the callers of a
    connection never hold a dead one. `js_api` retries transient failures
    (retry.py) itself. `close` hands a pooled connection back to its pool
    (pool.py) and closes any other; `discard` always closes.
    """

    def __init__(
        self,
        options: ConnectionOptions,
        *,
        read_timeout_s: float = 30.0,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = options
        self.read_timeout_s = read_timeout_s
        self.sock: socket.socket | None = None
        self.info: ServerInfo | None = None
        self.server_url: str = ""  # redacted: safe in any message
        self.broken = False
        self.connects = 0  # successful connects, reconnects included
        self._rng = rng or _RNG
        self._clock = clock
        self._sleep = sleep
        self._buf = b""
        self._pos = 0
        self._backlog: list[Frame] = []
        self._next_sid = 0
        self._sids: set[bytes] = set()
        self._subs: dict[bytes, str] = {}  # sid -> subject, replayed after a reconnect
        self._inbox_prefix = ""
        self._inbox_sid = b""
        self._req_counter = 0
        self._release: Callable[[LeanConnection], None] | None = None  # set by a pool

    # -- connect --------------------------------------------------------------
    @classmethod
    def connect(
        cls, options: ConnectionOptions, *, read_timeout_s: float = 30.0, rng: random.Random | None = None
    ) -> LeanConnection:
        """Connect to one server of the list (one try each, random order); raise if none takes it."""
        conn = cls(options, read_timeout_s=read_timeout_s, rng=rng)
        conn._connect_any()
        return conn

    @classmethod
    def open(
        cls,
        options: ConnectionOptions,
        *,
        read_timeout_s: float = 30.0,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> LeanConnection:
        """`connect`, retrying with backoff within `retryTimeout` while the failures are transient."""
        conn = cls(options, read_timeout_s=read_timeout_s, rng=rng, clock=clock, sleep=sleep)
        conn.reconnect()
        return conn

    def reconnect(self, budget: RetryBudget | None = None) -> None:
        """Open a new socket in place of the current one, retrying within `budget` (a fresh
        one by default); subscriptions are made again with the same sids and subjects."""
        self._close_socket()
        budget = budget or self.retry_budget()
        while True:
            try:
                self._connect_any()
                return
            except (NatsError, OSError) as exc:
                if not is_transient(exc) or not budget.wait(f"connecting to {self.options.display_servers}", exc):
                    if is_transient(exc):
                        raise exhausted(ConnectionLostError(f"{exc}; {budget.summary()}")) from exc
                    raise

    def retry_budget(self) -> RetryBudget:
        """A fresh retry budget of this connection's options (and injected clock)."""
        return RetryBudget.of(self.options, clock=self._clock, sleep=self._sleep)

    def _connect_any(self) -> None:
        urls = list(self.options.servers)
        self._rng.shuffle(urls)  # spread executors over the servers; fail over in any order
        errors: list[str] = []
        last: BaseException | None = None
        for url in urls:
            try:
                self._connect_one(url)
                if errors:
                    log.info("connected to %s after: %s", self.server_url, "; ".join(errors))
                return
            except (OSError, NatsError) as exc:
                errors.append(f"{redact_url(url)}: {self.redact(str(exc))}")
                self._close_socket()
                if last is None or not is_transient(exc):
                    last = exc  # the reason to report: a permanent one wins
        text = "could not connect to any server: " + "; ".join(errors)
        if last is not None and not is_transient(last):
            raise (ServerError(text) if isinstance(last, ServerError) else NatsError(text)) from last
        raise ConnectionLostError(text) from last

    def redact(self, text: str) -> str:
        """`text` with this connection's secrets replaced by ***."""
        return redact_text(text, self.options.secrets)

    def _connect_one(self, url: str) -> None:
        parts = urlsplit(url if "://" in url else f"nats://{url}")
        host = parts.hostname or "127.0.0.1"
        port = parts.port or 4222
        timeout = self.options.connect_timeout_s
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.broken = False
        self._buf, self._pos, self._backlog = b"", 0, []
        self.info = None
        frames = self._read_until(lambda f: f[0] == b"INFO", timeout)
        info = ServerInfo(json.loads(frames[-1][5]))
        self.info = info
        want_tls = self.options.tls or parts.scheme == "tls" or bool(info.raw.get("tls_required"))
        if want_tls:
            ctx = ssl_context(self.options)
            self.sock = ctx.wrap_socket(sock, server_hostname=host)
            self.sock.settimeout(timeout)
        connect: dict[str, Any] = {
            "verbose": False,
            "pedantic": False,
            "tls_required": want_tls,
            "name": CLIENT_NAME,
            "lang": "python-lean",
            "version": VERSION,
            "protocol": 1,
            "headers": True,
            "no_responders": True,
            "echo": True,
        }
        connect.update(
            connect_fields(
                self.options,
                str(info.raw.get("nonce", "")),
                unquote(parts.username) if parts.username else None,
                unquote(parts.password) if parts.password else None,
            )
        )
        self.send(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        self._read_until(lambda f: f[0] == b"PONG", timeout)
        self.sock.settimeout(self.read_timeout_s)
        self.server_url = redact_url(url)
        if not self._inbox_prefix:
            self._inbox_prefix = self.new_inbox()
            self._inbox_sid = self.subscribe(self._inbox_prefix + ".*")
        else:  # a reconnect: the same subscriptions under the same sids
            self.send(b"".join(f"SUB {subject} ".encode() + sid + CRLF for sid, subject in self._subs.items()))
        self.connects += 1

    def new_inbox(self) -> str:
        """A fresh reply subject under the `inboxPrefix` option (`_INBOX` by default)."""
        return f"{self.options.inbox_prefix}.{secrets.token_hex(11)}"

    def api_subject(self, api: str) -> str:
        """The subject of JetStream API call `api` (e.g. `STREAM.INFO.S`): the one place that
        applies the `domain` / `apiPrefix` options."""
        return f"{self.options.api_prefix}.{api}"

    def _close_socket(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError as exc:
                log.debug("closing socket: %s", exc)
            self.sock = None

    def discard(self) -> None:
        """Close the socket (never back to a pool)."""
        self._release = None
        self._close_socket()

    def close(self) -> None:
        """Done with this connection: back to its pool if it came from one, else closed."""
        release, self._release = self._release, None
        if release is not None:
            release(self)
        else:
            self._close_socket()

    def __enter__(self) -> LeanConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pooling support ------------------------------------------------------------
    def healthy(self, timeout: float) -> bool:
        """A PING/PONG round trip within `timeout` (also reads what arrived while idle)."""
        if self.sock is None or self.broken:
            return False
        try:
            self.flush(timeout)
            return True
        except (NatsError, OSError) as exc:
            log.info("pooled connection to %s is unusable (%s): opening another", self.server_url, exc)
            return False

    def reset_for_reuse(self) -> None:
        """Drop what the last user left: its subscriptions, buffered frames, socket timeout."""
        extra = [sid for sid in self._subs if sid != self._inbox_sid]
        for sid in extra:
            self.unsubscribe(sid)
        self._backlog = []
        if self.sock is not None:
            self.sock.settimeout(self.read_timeout_s)

    # -- writing ----------------------------------------------------------------
    def send(self, data: bytes) -> None:
        if self.sock is None:
            raise ConnectionLostError(f"connection to {self.server_url or 'the server'} is closed")
        try:
            self.sock.sendall(data)
        except OSError as exc:
            # part of a frame may have gone out: the stream is unusable, never reuse it
            self.broken = True
            self._close_socket()
            raise ConnectionLostError(
                f"lost the connection to {self.server_url or 'the server'} while sending: {exc}"
            ) from exc

    def new_sid(self) -> bytes:
        self._next_sid += 1
        return str(self._next_sid).encode()

    def subscribe(self, subject: str) -> bytes:
        sid = self.new_sid()
        self._sids.add(sid)
        self._subs[sid] = subject
        self.send(f"SUB {subject} ".encode() + sid + CRLF)
        return sid

    def unsubscribe(self, sid: bytes) -> None:
        """Stop the subscription; frames already buffered for it are dropped."""
        self._sids.discard(sid)
        self._subs.pop(sid, None)
        self._backlog = [f for f in self._backlog if f[2] != sid]
        if self.sock is not None:  # a closed connection has no subscription left to end
            self.send(b"UNSUB " + sid + CRLF)

    @staticmethod
    def pub_frame(subject: str, payload: bytes, reply: str = "", headers: bytes = b"") -> bytes:
        """The PUB/HPUB frame for one message (pure; the writer batches these)."""
        rep = f" {reply}" if reply else ""
        if headers:
            return b"".join(
                (
                    f"HPUB {subject}{rep} {len(headers)} {len(headers) + len(payload)}\r\n".encode(),
                    headers,
                    payload,
                    CRLF,
                )
            )
        return b"".join((f"PUB {subject}{rep} {len(payload)}\r\n".encode(), payload, CRLF))

    def publish(self, subject: str, payload: bytes, reply: str = "", headers: bytes = b"") -> None:
        self.send(self.pub_frame(subject, payload, reply, headers))

    def flush(self, timeout: float | None = None) -> None:
        """PING and wait for the PONG: everything sent before has been processed."""
        self.send(b"PING\r\n")
        self._read_until(lambda f: f[0] == b"PONG", timeout or self.read_timeout_s, keep=True)

    # -- reading ----------------------------------------------------------------
    def _lost(self, why: str, cause: BaseException | None = None) -> ConnectionLostError:
        self.broken = True
        self._close_socket()
        return ConnectionLostError(f"{why} {self.server_url or 'server'}" + (f": {cause}" if cause else ""))

    def _recv(self) -> bytes:
        if self.sock is None:
            raise ConnectionLostError(f"connection to {self.server_url or 'the server'} is closed")
        try:
            chunk = self.sock.recv(RECV_SIZE)
        except TimeoutError:
            raise NatsTimeoutError(f"no data from {self.server_url or 'server'} in time") from None
        except OSError as exc:
            raise self._lost("lost the connection to", exc) from exc
        if not chunk:
            raise self._lost("connection closed by")
        return chunk

    def fill(self) -> None:
        """Block for more bytes from the socket and append them to the read buffer."""
        chunk = self._recv()
        self._buf = self._buf[self._pos :] + chunk if self._pos < len(self._buf) else chunk
        self._pos = 0

    def server_error(self, payload: bytes) -> ServerError:
        """The exception for a `-ERR` line (its text is the server's, redacted), with what to do
        about a permission the user lacks."""
        text = self.redact(payload.decode("utf-8", "replace").strip("' "))
        return ServerError("server error: " + text + permission_hint(text))

    def read_frames(self, take: Callable[[bytes, int], int] | None = None) -> list[Frame]:
        """Block until at least one frame is available; return all parsed frames.

        PINGs are answered here; `-ERR` raises; INFO updates are absorbed.
        `take(buf, pos)`, when given, sees each read's buffer first and may consume
        frames from `pos` itself in bulk (a publisher's pub acks), returning where it
        stopped; the call returns once it took any, with the frames after them.
        """
        if self._backlog:
            backlog, self._backlog = self._backlog, []
            return backlog
        while True:
            chunk = self._recv()
            if self._pos:
                self._buf = self._buf[self._pos :] + chunk
            else:
                self._buf = self._buf + chunk if self._buf else chunk
            taken = 0 if take is None else take(self._buf, 0)
            frames, self._pos = parse_frames(self._buf, taken)
            if not frames:
                if taken:
                    return []
                continue
            out: list[Frame] = []
            for f in frames:
                op = f[0]
                if op == b"MSG":
                    if f[2] in self._sids:
                        out.append(f)
                elif op == b"PING":
                    self.send(b"PONG\r\n")
                elif op == b"-ERR":
                    raise self.server_error(f[5])
                elif op == b"INFO":
                    self.info = ServerInfo(json.loads(f[5]))
                    out.append(f)
                else:
                    out.append(f)
            if out or taken:
                return out

    def frames_within(self, timeout: float) -> list[Frame]:
        """`read_frames`, waiting at most `timeout` seconds (`NatsTimeoutError` when nothing came):
        for callers that take many messages of one subscription in bulk (a driver's pulls)."""
        if self._backlog:
            return self.read_frames()
        if self.sock is None:
            raise ConnectionLostError(f"connection to {self.server_url or 'the server'} is closed")
        saved = self.sock.gettimeout()
        self.sock.settimeout(max(0.001, timeout))
        try:
            return self.read_frames()
        finally:
            if self.sock is not None:
                self.sock.settimeout(saved)

    def _read_until(
        self, pred: Any, timeout: float, keep: bool = False, drop: Callable[[Frame], bool] | None = None
    ) -> list[Frame]:
        """Read frames until `pred(frame)`; earlier messages are kept in the backlog if `keep`
        (except those `drop` matches: late replies to requests that timed out)."""
        if self.sock is None:
            raise ConnectionLostError(f"connection to {self.server_url or 'the server'} is closed")
        deadline = time.monotonic() + timeout
        seen: list[Frame] = []
        saved = self.sock.gettimeout()
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise NatsTimeoutError(f"timed out waiting for {self.server_url or 'the server'}")
                assert self.sock is not None
                self.sock.settimeout(remaining)
                frames = self.read_frames()
                for i, f in enumerate(frames):
                    if pred(f):
                        rest = frames[i + 1 :]
                        self._backlog = (seen if keep else []) + rest + self._backlog
                        return [f]
                    if f[0] == b"MSG" and (drop is None or not drop(f)):
                        seen.append(f)
        finally:
            if self.sock is not None:
                self.sock.settimeout(saved)

    def wait_for_sid(self, sid: bytes, timeout: float | None = None) -> Frame:
        """The next message on subscription `sid` (others stay in the backlog)."""
        return self._read_until(
            lambda f: f[0] == b"MSG" and f[2] == sid, timeout or self.read_timeout_s, keep=True
        )[0]

    # -- requests -----------------------------------------------------------------
    def new_reply(self) -> str:
        self._req_counter += 1
        return f"{self._inbox_prefix}.{self._req_counter}"

    def request(
        self, subject: str, payload: bytes = b"", timeout: float | None = None, headers: bytes = b""
    ) -> tuple[bytes, bytes]:
        """Send a request; return the reply's (header_bytes, payload)."""
        reply = self.new_reply()
        self.publish(subject, payload, reply=reply, headers=headers)
        rb = reply.encode()
        inbox_sid = self._inbox_sid
        frame = self._read_until(
            lambda f: f[0] == b"MSG" and f[1] == rb,
            timeout or self.read_timeout_s,
            keep=True,
            drop=lambda f: f[2] == inbox_sid,  # a late reply to an earlier request that timed out
        )[0]
        hdr = frame[4]
        if hdr:
            status, desc, _ = parse_headers(hdr)
            if status == Status.NO_RESPONDERS:
                raise NoRespondersError(f"no responders for {subject}")
            if status is not None and status >= FIRST_ERROR_STATUS:
                raise NatsError(f"{subject}: status {status} {desc}")
        return hdr, frame[5]

    def js_api(
        self, api: str, body: dict[str, Any] | None = None, timeout: float | None = None, *, retry: bool = True
    ) -> dict[str, Any]:
        """Call the JetStream API `api` (e.g. `STREAM.INFO.S`, under the API prefix); raise
        `JetStreamApiError` on an error reply.

        Transient failures (retry.py) are retried with backoff within `retryTimeout`,
        reconnecting first when the connection broke; the final error says what it was
        (no responders: JetStream unavailable; no reply; connection lost) and how long
        it was retried. Safe for every call the connector makes: each is idempotent (info,
        names, create with a fixed name and config, reset to a sequence, purge up to one,
        delete). `retry=False` makes one attempt (cleanup that may be skipped).
        """
        subject = self.api_subject(api)
        payload = json.dumps(body).encode() if body is not None else b""
        per_try = timeout or self.options.request_timeout_s
        budget = self.retry_budget()
        while True:
            try:
                if self.sock is None:
                    self._connect_any()
                wait = per_try if budget.retries == 0 else max(0.05, min(per_try, budget.remaining()))
                _, data = self.request(subject, payload, wait)
                reply = json.loads(data) if data else {}
                err = reply.get("error")
                if err:
                    raise JetStreamApiError(
                        subject, int(err.get("code", 0)), int(err.get("err_code", 0)), str(err.get("description", ""))
                    )
                return reply
            except (NatsError, OSError) as exc:
                if not retry or not is_transient(exc):
                    raise
                if not budget.wait(f"JetStream API {subject} on {self.server_url or self.options.display_servers}", exc):
                    raise exhausted(self._gave_up(exc, subject, per_try, budget)) from exc
                if breaks_connection(exc):
                    self._close_socket()
                elif isinstance(exc, NatsTimeoutError) and not self.healthy(min(HEALTH_CHECK_S, per_try)):
                    self._close_socket()

    def _gave_up(self, exc: BaseException, subject: str, per_try: float, budget: RetryBudget) -> NatsError:
        """The final error of a JetStream API call whose retries ran out: what it is, how long it tried."""
        server = self.server_url or self.options.display_servers
        if isinstance(exc, NoRespondersError):
            hint = f" (option domain={self.options.domain!r})" if self.options.domain else ""
            return JetStreamUnavailableError(
                f"the JetStream API did not answer on {server}: no responders for {subject} (status 503): "
                f"JetStream is not enabled there{hint}, the server is starting, or a cluster is "
                f"electing a leader; {budget.summary()}"
            )
        if isinstance(exc, JetStreamApiError):
            return JetStreamApiError(exc.subject, exc.code, exc.err_code, f"{exc.description}; {budget.summary()}")
        if isinstance(exc, NatsTimeoutError):
            return NatsTimeoutError(
                f"no reply to {subject} from {server} within requestTimeout={per_try:g}s; {budget.summary()}"
            )
        return ConnectionLostError(f"{self.redact(str(exc))}; {budget.summary()}")
