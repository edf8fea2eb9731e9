"""Counter streams (ADR-49): `allow_msg_counter` and the ``Nats-Incr`` header.

On a counter stream every publish carries ``Nats-Incr: <integer>`` (any
size, optional sign) and no payload; the server stores the subject's new
total as the payload ``{"val":"<total>"}`` (the last message on the subject
holds the running total) and answers with the total in the pub ack
(``"val"``). The header is refused on other streams, without it a publish to a
counter stream is refused, and it does not mix with rollups or expectations.
A previous total that is not ``{"val": "<integer>"}`` makes the counter
broken.

Counters fed by sources: a counter stream that sources counter streams adds
up their totals. A sourced message (``Nats-Stream-Source: <stream> <seq> ...
<origin subject> ...``) carries its origin's total; the stream keeps the
last total seen per origin stream and subject in ``Nats-Counter-Sources``
(``{"<stream>":{"<subject>":"<total>"}}``, JSON as Go writes it), adds the
difference to its own total and stores that difference as the message's
``Nats-Incr``. The header is carried forward on every counter message of
the subject (nats-server's processJetStreamMsg).

Pure functions; the stream calls `check_incr` with the other header checks and
`next_total` just before storing (server/stream.go processJetStreamMsg).
"""

from __future__ import annotations

import json
import re
from typing import Final

from jetstream_server.core.headers import Headers
from jetstream_server.jetstream.errors import ApiError, Err

INCR: Final = "Nats-Incr"
COUNTER_SOURCES: Final = "Nats-Counter-Sources"
INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_INCOMPATIBLE: Final = (
    "Nats-Rollup",
    "Nats-Expected-Stream",
    "Nats-Expected-Last-Msg-Id",
    "Nats-Expected-Last-Subject-Sequence-Subject",
    "Nats-Expected-Last-Sequence",
    "Nats-Expected-Last-Subject-Sequence",
)


def check_incr(hdr: Headers, payload: bytes, allowed: bool) -> int | None:
    """The increment a publish asks for (None without ``Nats-Incr``), after
    nats-server's checks of it, in its order."""
    raw = hdr.get(INCR)
    if not raw:
        return None
    if INTEGER.fullmatch(raw) is None:
        raise ApiError(Err.MESSAGE_INCR_INVALID)
    if not allowed:
        raise ApiError(Err.MESSAGE_INCR_DISABLED)
    if payload:
        raise ApiError(Err.MESSAGE_INCR_PAYLOAD)
    if any(hdr.get(name) for name in _INCOMPATIBLE):
        raise ApiError(Err.MESSAGE_INCR_INVALID)
    return int(raw)


def current_total(previous_payload: bytes | None) -> int:
    """The running total stored in the subject's last message (0 when none)."""
    if previous_payload is None:
        return 0
    try:
        value = json.loads(previous_payload)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(Err.MESSAGE_COUNTER_BROKEN) from None
    if not isinstance(value, dict):
        raise ApiError(Err.MESSAGE_COUNTER_BROKEN)
    total = value.get("val", "")
    if not isinstance(total, str):
        raise ApiError(Err.MESSAGE_COUNTER_BROKEN)
    # like Go's big.Int.SetString on the stored text: what does not parse counts as 0
    return int(total) if INTEGER.fullmatch(total) else 0


def total_payload(total: int) -> bytes:
    return b'{"val":"%d"}' % total


def value_of(payload: bytes) -> str:
    """The total a stored counter message holds (for the pub ack)."""
    try:
        value = json.loads(payload)
        return str(value.get("val", "")) if isinstance(value, dict) else ""
    except (ValueError, UnicodeDecodeError):
        return ""


def parse_sources(raw: str | None) -> dict[str, dict[str, str]]:
    """A stored ``Nats-Counter-Sources`` ({} when absent); COUNTER_BROKEN when it
    is not an object of objects of strings (Go's json.Unmarshal would fail)."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise ApiError(Err.MESSAGE_COUNTER_BROKEN) from None
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        inner is None or (isinstance(inner, dict) and all(isinstance(v, str) for v in inner.values()))
        for inner in value.values()
    ):
        raise ApiError(Err.MESSAGE_COUNTER_BROKEN)
    return {k: dict(v or {}) for k, v in value.items()}


def encode_sources(sources: dict[str, dict[str, str]]) -> str:
    """Go's json.Marshal of the map: sorted keys, compact, <, > and & escaped."""
    text = json.dumps(sources, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def sourced_increment(sources: dict[str, dict[str, str]], source_header: str, subject: str,
                      payload: bytes) -> int:
    """The increment a sourced counter message brings: its origin total minus the
    last one seen from the same origin stream and subject (recorded in `sources`)."""
    fields = source_header.split(" ")
    origin_stream = fields[0]
    origin_subject = fields[4] if len(fields) >= 5 else subject
    try:
        value = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(Err.MESSAGE_COUNTER_BROKEN) from None
    if not isinstance(value, dict) or not isinstance(value.get("val", ""), str):
        raise ApiError(Err.MESSAGE_COUNTER_BROKEN)
    text = value.get("val", "")
    total = int(text) if INTEGER.fullmatch(text) else 0
    seen = sources.setdefault(origin_stream, {})
    previous = seen.get(origin_subject, "")
    seen[origin_subject] = str(total)
    return total - (int(previous) if INTEGER.fullmatch(previous) else 0)


def set_header(block: bytes, name: str, value: str) -> bytes:
    """Go's setHeader: replace the value of the first `name` line, else append one."""
    key = name.encode() + b":"
    lines = block.split(b"\r\n")
    line = key + b" " + value.encode()
    for i, existing in enumerate(lines[1:], start=1):
        if existing.startswith(key):
            lines[i] = line
            return b"\r\n".join(lines)
    body = block[:-2] if block.endswith(b"\r\n\r\n") else block + b"\r\n"
    return body + line + b"\r\n\r\n"
