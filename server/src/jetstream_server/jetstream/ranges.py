"""Numeric ranges the server accepts from requests, checked at the API edge.

nats-server decodes sequences as uint64; this server's store keeps them in
signed 64-bit arrays (`store.base.MAX_SEQ`). A value a client may send but the
store cannot hold is refused here, with the operation's own nats-server error
and a description naming the field and the limit, before anything touches the
store: a refused request changes nothing.

Use `check_seq` for anything that becomes a stream sequence (purge `seq`,
`first_seq`, reset sequences) and `check_count` for counts (purge `keep`).
"""

from __future__ import annotations

from typing import Final

from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.store.base import MAX_SEQ

MAX_INT64: Final = (1 << 63) - 1
MAX_UINT64: Final = (1 << 64) - 1

__all__ = ["MAX_INT64", "MAX_SEQ", "MAX_UINT64", "check_count", "check_seq"]


def check_seq(value: int, field: str, error: Err) -> int:
    """`value` if a store can reach that sequence; else ApiError(`error`) naming `field`."""
    if value > MAX_SEQ:
        raise ApiError(
            error, err=f"{field} {value} is above the largest stream sequence {MAX_SEQ}"
        )
    return value


def check_count(value: int, field: str, error: Err) -> int:
    """`value` if it fits a message count (no store holds more than MAX_SEQ messages)."""
    if value > MAX_SEQ:
        raise ApiError(error, err=f"{field} {value} is above the largest message count {MAX_SEQ}")
    return value
