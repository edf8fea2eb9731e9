"""The NATS client protocol, sans-IO: a parser for what clients send and
encoders for what the server sends.

`Parser.feed(data) -> list[Op]` takes any chunk of bytes (a whole buffer, one
byte, a frame split anywhere) and returns the complete operations it now
holds; the rest waits for the next `feed`. Invariants:
- any input either parses into ops or raises `ProtocolError` (nothing else);
  the error carries the ops completed before it in the same `feed`
  (`ProtocolError.ops`); after an error the parser is unusable, as the
  connection is closed;
- a control line longer than `max_control_line` (counted while it is still
  incomplete, so a peer cannot grow the buffer without bound) raises
  ``Maximum Control Line Exceeded``; a PUB/HPUB size over `max_payload` raises
  ``Maximum Payload Violation`` before the payload is buffered;
- control lines end with ``\\n`` (a preceding ``\\r`` is dropped), as
  nats-server accepts; a payload must be followed by ``\\r\\n``;
- op names are case-insensitive; many ops per `feed` are parsed without
  copying the buffer per op (offsets into one bytearray).

`ProtocolError.reason` is the text nats-server sends in ``-ERR '<reason>'``.
The encoders are pure functions returning bytes. No asyncio here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

MAX_CONTROL_LINE_SIZE: Final = 4096
MAX_PAYLOAD_SIZE: Final = 1024 * 1024
CRLF: Final = b"\r\n"

ERR_UNKNOWN_OP: Final = "Unknown Protocol Operation"
# the bytes an op may start with (nats-server's parser, state OP_START)
_OP_START: Final = frozenset(b"PpHhSsUuRrLlAaCcIi+-")
ERR_MAX_CONTROL_LINE: Final = "maximum control line exceeded"
ERR_MAX_PAYLOAD: Final = "Maximum Payload Violation"
ERR_AUTH: Final = "Authorization Violation"
ERR_AUTH_TIMEOUT: Final = "Authentication Timeout"
ERR_STALE: Final = "Stale Connection"
ERR_SLOW_CONSUMER: Final = "Slow Consumer"
ERR_INVALID_SUBJECT: Final = "Invalid Subject"
ERR_INVALID_PUB_SUBJECT: Final = "Invalid Publish Subject"
ERR_INVALID_QUEUE: Final = "Invalid Queue Name"
ERR_TLS_REQUIRED: Final = "Secure Connection - TLS Required"


class ProtocolError(Exception):
    """A protocol violation; `reason` is what goes into ``-ERR '<reason>'``.

    `silent` is True where nats-server closes without sending ``-ERR`` (bad
    arguments of a known operation: wrong argument count, bad sizes, CONNECT
    JSON that does not parse); `detail` names the problem for the server log.
    """

    def __init__(self, reason: str, detail: str = "", *, silent: bool = False) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.silent = silent
        # the complete ops that came before the error in the same feed: nats-server
        # applies them (a PUB before garbage is still delivered)
        self.ops: list[Op] = []


def _arg_error(detail: str) -> ProtocolError:
    return ProtocolError(ERR_UNKNOWN_OP, detail, silent=True)


# -- operations a client sends -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connect:
    options: dict[str, Any] = field(default_factory=dict)


class Pub:
    """PUB/HPUB. A plain class rather than a frozen dataclass or a NamedTuple: it
    is built once per message on the hot path, and the compiled build makes it a
    native class (a NamedTuple's constructor is a Python function even there)."""

    __slots__ = ("subject", "reply", "headers", "payload")

    def __init__(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.subject = subject
        self.reply = reply
        self.headers = headers
        self.payload = payload

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pub):
            return NotImplemented
        return self._fields() == other._fields()

    def _fields(self) -> tuple[str, str | None, bytes | None, bytes]:
        return (self.subject, self.reply, self.headers, self.payload)

    def __repr__(self) -> str:
        return "Pub(subject={!r}, reply={!r}, headers={!r}, payload={!r})".format(*self._fields())


@dataclass(frozen=True, slots=True)
class Sub:
    subject: str
    queue: str | None
    sid: str


@dataclass(frozen=True, slots=True)
class Unsub:
    sid: str
    max_msgs: int | None


@dataclass(frozen=True, slots=True)
class Ping:
    pass


@dataclass(frozen=True, slots=True)
class Pong:
    pass


Op = Connect | Pub | Sub | Unsub | Ping | Pong

PING_OP: Final = Ping()
PONG_OP: Final = Pong()


def _parse_size(raw: bytes) -> int:
    if not raw or not raw.isdigit() or len(raw) > 12:
        raise _arg_error(f"bad size {raw!r}")
    return int(raw)


def _text(raw: bytes) -> str:
    # nats-server takes subjects as bytes; invalid UTF-8 survives the round trip
    return raw.decode("utf-8", "surrogateescape")


class Parser:
    """Incremental parser for client-to-server operations."""

    __slots__ = ("max_control_line", "max_payload", "_buf", "_pending", "_failed", "_need")

    def __init__(
        self, max_control_line: int = MAX_CONTROL_LINE_SIZE, max_payload: int = MAX_PAYLOAD_SIZE
    ) -> None:
        self.max_control_line = max_control_line
        self.max_payload = max_payload
        self._buf = bytearray()
        # a PUB/HPUB whose control line is parsed and whose payload is awaited:
        # (subject, reply, header_size, total_size)
        self._pending: tuple[str, str | None, int, int] | None = None
        self._failed = False
        # bytes `_buf` must hold before parsing is worth trying again
        self._need = 0

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[Op]:
        if self._failed:
            raise ProtocolError(ERR_UNKNOWN_OP, "parser used after an error")
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                # a payload still arriving: no parsing, no copy of what we hold
                return []
            data = bytes(buf)
            buf.clear()
        ops: list[Op] = []
        try:
            pos = self._parse(data, ops)
        except ProtocolError as exc:
            self._failed = True
            exc.ops = ops
            raise
        if pos < len(data):
            buf += memoryview(data)[pos:]
        return ops

    def _parse(self, data: bytes, ops: list[Op]) -> int:
        """Parse complete ops from `data` into `ops`; returns where the rest starts."""
        append = ops.append
        find = data.find
        startswith = data.startswith
        max_payload = self.max_payload
        pos = 0
        end = len(data)
        self._need = 0
        while pos < end:
            pending = self._pending
            if pending is not None:
                subject, reply, hdr_size, total = pending
                stop = pos + total
                if end < stop + 2:
                    if end > stop and data[stop] != 13:
                        raise ProtocolError(ERR_UNKNOWN_OP, "payload not followed by CRLF")
                    # parse again when the byte after the payload is here (a CR, or the
                    # error at once, as nats-server's parser), then when its LF is
                    self._need = (stop + 1 if end <= stop else stop + 2) - pos
                    return pos
                if not startswith(CRLF, stop):
                    raise ProtocolError(ERR_UNKNOWN_OP, "payload not followed by CRLF")
                if hdr_size >= 0:
                    append(Pub(subject, reply, data[pos : pos + hdr_size], data[pos + hdr_size : stop]))
                else:
                    append(Pub(subject, reply, None, data[pos:stop]))
                pos = stop + 2
                self._pending = None
                continue
            nl = find(b"\n", pos)
            if nl < 0:
                if data[pos] not in _OP_START:
                    # nats-server's parser refuses an op at its first byte
                    raise ProtocolError(ERR_UNKNOWN_OP, f"unknown operation {data[pos:pos + 8]!r}")
                if end - pos > self.max_control_line:
                    raise ProtocolError(ERR_MAX_CONTROL_LINE)
                return pos
            line_end = nl - 1 if nl > pos and data[nl - 1] == 13 else nl
            hpub = False
            if (startswith(b"PUB ", pos) or (hpub := startswith(b"HPUB ", pos))) and (
                line_end - pos <= self.max_control_line
            ):
                # the hot path: a PUB or HPUB whose payload is already here; anything
                # unusual (a bad size, a header larger than the message) is left to
                # _control, which says what is wrong
                args = data[pos + 5 if hpub else pos + 4 : line_end].split()
                nargs = len(args) - 1 if hpub else len(args)
                if nargs == 2 or nargs == 3:
                    size_b = args[-1]
                    hdr = 0
                    if hpub:
                        hdr_b = args[-2]
                        hdr = int(hdr_b) if hdr_b.isdigit() and len(hdr_b) < 13 else -1
                    if hdr >= 0 and size_b.isdigit() and len(size_b) < 13:
                        size = int(size_b)
                        if hdr <= size:
                            if size > max_payload:
                                raise ProtocolError(ERR_MAX_PAYLOAD, f"{size} > {max_payload}")
                            start = nl + 1
                            stop = start + size
                            if stop + 2 <= end:
                                if not startswith(CRLF, stop):
                                    raise ProtocolError(ERR_UNKNOWN_OP, "payload not followed by CRLF")
                                split = start + hdr
                                append(
                                    Pub(
                                        args[0].decode("utf-8", "surrogateescape"),
                                        args[1].decode("utf-8", "surrogateescape") if nargs == 3 else None,
                                        data[start:split] if hpub else None,
                                        data[split:stop],
                                    )
                                )
                                pos = stop + 2
                                continue
            op = self._control(data[pos:line_end])
            pos = nl + 1
            if op is not None:
                append(op)
        return pos

    def _control(self, line: bytes) -> Op | None:
        """Parse one control line; PUB/HPUB set `_pending` and return None."""
        head, _, rest = line.partition(b" ")
        if b"\t" in head:
            head, _, tail = line.partition(b"\t")
            rest = tail
        name = head.upper()
        if len(line) > self.max_control_line:
            raise ProtocolError(ERR_MAX_CONTROL_LINE)
        if name == b"PUB":
            args = rest.split()
            if len(args) == 2:
                subject, reply, size = args[0], None, args[1]
            elif len(args) == 3:
                subject, reply, size = args[0], args[1], args[2]
            else:
                raise _arg_error(f"PUB needs 2 or 3 arguments, got {len(args)}")
            total = _parse_size(size)
            if total > self.max_payload:
                raise ProtocolError(ERR_MAX_PAYLOAD, f"{total} > {self.max_payload}")
            self._pending = (_text(subject), _text(reply) if reply else None, -1, total)
            return None
        if name == b"HPUB":
            args = rest.split()
            if len(args) == 3:
                subject, reply, hsize, tsize = args[0], None, args[1], args[2]
            elif len(args) == 4:
                subject, reply, hsize, tsize = args[0], args[1], args[2], args[3]
            else:
                raise _arg_error(f"HPUB needs 3 or 4 arguments, got {len(args)}")
            hdr = _parse_size(hsize)
            total = _parse_size(tsize)
            if hdr > total:
                raise _arg_error("header size larger than total size")
            if total > self.max_payload:
                raise ProtocolError(ERR_MAX_PAYLOAD, f"{total} > {self.max_payload}")
            self._pending = (_text(subject), _text(reply) if reply else None, hdr, total)
            return None
        if name == b"PING":
            return PING_OP  # nats-server ignores anything after PING/PONG
        if name == b"PONG":
            return PONG_OP
        if name == b"SUB":
            args = rest.split()
            if len(args) == 2:
                return Sub(_text(args[0]), None, _text(args[1]))
            if len(args) == 3:
                return Sub(_text(args[0]), _text(args[1]), _text(args[2]))
            raise _arg_error(f"SUB needs 2 or 3 arguments, got {len(args)}")
        if name == b"UNSUB":
            args = rest.split()
            if len(args) == 1:
                return Unsub(_text(args[0]), None)
            if len(args) == 2:
                # a max that is not a number means "now", as in nats-server
                raw_max = args[1]
                max_msgs = int(raw_max) if raw_max.isdigit() and len(raw_max) < 19 else 0
                return Unsub(_text(args[0]), max_msgs)
            if not args:
                raise ProtocolError(ERR_UNKNOWN_OP, "UNSUB without a sid")
            raise _arg_error(f"UNSUB needs 1 or 2 arguments, got {len(args)}")
        if name == b"CONNECT":
            try:
                options = json.loads(rest)
            except (ValueError, RecursionError) as exc:  # RecursionError: deep nesting
                raise _arg_error(f"CONNECT JSON: {exc}") from exc
            if not isinstance(options, dict):
                raise _arg_error("CONNECT argument is not a JSON object")
            return Connect(options)
        if name in (b"INFO", b"+OK", b"-ERR"):
            return None  # nats-server accepts and ignores these from clients
        if not line.strip():
            raise ProtocolError(ERR_UNKNOWN_OP, "empty control line")
        raise ProtocolError(ERR_UNKNOWN_OP, f"unknown operation {head[:32]!r}")


# -- what the server sends -----------------------------------------------------

PING: Final = b"PING\r\n"
PONG: Final = b"PONG\r\n"
OK: Final = b"+OK\r\n"


def encode_info(info: dict[str, Any]) -> bytes:
    return b"INFO " + json.dumps(info, separators=(",", ":")).encode() + CRLF


def encode_err(reason: str) -> bytes:
    return b"-ERR '" + reason.encode() + b"'\r\n"


def encode_msg(
    subject: bytes, sid: bytes, reply: bytes | None, payload: bytes | memoryview
) -> bytes:
    """``MSG <subject> <sid> [reply] <size>``; subject, sid and reply already encoded."""
    if reply:
        return b"MSG %s %s %s %d\r\n%s\r\n" % (subject, sid, reply, len(payload), payload)
    return b"MSG %s %s %d\r\n%s\r\n" % (subject, sid, len(payload), payload)


def encode_hmsg(
    subject: bytes, sid: bytes, reply: bytes | None, headers: bytes, payload: bytes | memoryview
) -> bytes:
    """``HMSG <subject> <sid> [reply] <hdr_size> <total_size>``."""
    hlen = len(headers)
    total = hlen + len(payload)
    if reply:
        return b"HMSG %s %s %s %d %d\r\n%s%s\r\n" % (
            subject, sid, reply, hlen, total, headers, payload
        )
    return b"HMSG %s %s %d %d\r\n%s%s\r\n" % (subject, sid, hlen, total, headers, payload)


def format_literal(raw: bytes) -> bytes:
    """`raw` as literal text inside a bytes ``%`` format (every ``%`` doubled)."""
    return raw.replace(b"%", b"%%")


def msg_formats(sid: bytes, reply_format: bytes = b"") -> tuple[bytes, bytes]:
    """``%`` formats for the frames of many messages to one subscription `sid`
    (a run, `Router.publish_run`), each with a reply subject made by
    `reply_format`, a format of its own whose conversions follow the subject's
    (b"": no reply; its literal parts escaped with `format_literal`).

    ``MSG`` takes (subject, *reply values, payload size, payload); ``HMSG``
    (subject, *reply values, header size, total size, headers and payload as
    one buffer). Payloads may be any buffer (memoryviews of stored records)."""
    head = b" " + format_literal(sid)
    if reply_format:
        head += b" " + reply_format
    return b"MSG %s" + head + b" %d\r\n%s\r\n", b"HMSG %s" + head + b" %d %d\r\n%s\r\n"


def encode_connect(options: dict[str, Any]) -> bytes:
    return b"CONNECT " + json.dumps(options, separators=(",", ":")).encode() + CRLF


def encode_pub(subject: str, reply: str | None, payload: bytes) -> bytes:
    """Client-side PUB, for tests and tools that speak the raw protocol."""
    args = f"{subject} {reply}" if reply else subject
    return b"PUB %s %d\r\n" % (args.encode(), len(payload)) + payload + CRLF


def encode_hpub(subject: str, reply: str | None, headers: bytes, payload: bytes) -> bytes:
    args = f"{subject} {reply}" if reply else subject
    hlen = len(headers)
    return (
        b"HPUB %s %d %d\r\n" % (args.encode(), hlen, hlen + len(payload))
        + headers
        + payload
        + CRLF
    )


def encode_sub(subject: str, queue: str | None, sid: str) -> bytes:
    return (f"SUB {subject} {queue} {sid}" if queue else f"SUB {subject} {sid}").encode() + CRLF


def encode_unsub(sid: str, max_msgs: int | None = None) -> bytes:
    return (f"UNSUB {sid} {max_msgs}" if max_msgs is not None else f"UNSUB {sid}").encode() + CRLF
