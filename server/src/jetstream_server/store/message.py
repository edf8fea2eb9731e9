"""`StoredMessage`: one message as a store holds it (subject, sequence, time,
headers, payload). Its own module so that `base` (the store contract) and
`runs` (runs of messages, which the contract returns) both build on it
without importing each other."""

from __future__ import annotations


class StoredMessage:
    """One stored message; treat it as immutable.

    A plain class with `__slots__` rather than a NamedTuple or a frozen
    dataclass: one is built per publish, and the compiled build makes it a
    native class (a NamedTuple's constructor stays a Python function there,
    about 0.3 µs a publish). It compares and hashes as the tuple of its fields
    did."""

    __slots__ = ("subject", "seq", "timestamp_ns", "headers", "data")

    def __init__(
        self, subject: str, seq: int, timestamp_ns: int, headers: bytes | None, data: bytes
    ) -> None:
        self.subject = subject
        self.seq = seq
        self.timestamp_ns = timestamp_ns
        self.headers = headers
        self.data = data

    def _fields(self) -> tuple[str, int, int, bytes | None, bytes]:
        return (self.subject, self.seq, self.timestamp_ns, self.headers, self.data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoredMessage):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            "StoredMessage(subject={!r}, seq={!r}, timestamp_ns={!r}, headers={!r}, data={!r})"
        ).format(*self._fields())
