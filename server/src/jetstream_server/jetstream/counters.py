"""Counter streams (ADR-49): `allow_msg_counter` and the ``Nats-Incr`` header.

On a counter stream every publish carries ``Nats-Incr: <integer>`` (any
size, optional sign) and no payload; the server stores the subject's new
total as the payload ``{"val":"<total>"}`` (the last message on the subject
holds the running total) and answers with the total in the pub ack
(``"val"``). The header is refused on other streams, without it a publish to a
counter stream is refused, and it does not mix with rollups or expectations.
A previous total that is not ``{"val": "<integer>"}`` makes the counter
broken. ``Nats-Counter-Sources`` (the per-source totals a sourcing stream
keeps) is carried forward from the previous message.

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
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
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
    if _INTEGER.fullmatch(raw) is None:
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
    return int(total) if _INTEGER.fullmatch(total) else 0


def total_payload(total: int) -> bytes:
    return b'{"val":"%d"}' % total


def value_of(payload: bytes) -> str:
    """The total a stored counter message holds (for the pub ack)."""
    try:
        value = json.loads(payload)
        return str(value.get("val", "")) if isinstance(value, dict) else ""
    except (ValueError, UnicodeDecodeError):
        return ""
