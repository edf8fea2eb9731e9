"""`StoredMessage`: one message as a store holds it (subject, sequence, time,
headers, payload). Its own module so that `base` (the store contract) and
`runs` (runs of messages, which the contract returns) both build on it
without importing each other."""

from __future__ import annotations

from typing import NamedTuple


class StoredMessage(NamedTuple):
    """One stored message. A typed tuple rather than a frozen dataclass: one is
    built per publish and per read, and a tuple is built in a third of the time."""

    subject: str
    seq: int
    timestamp_ns: int
    headers: bytes | None
    data: bytes
