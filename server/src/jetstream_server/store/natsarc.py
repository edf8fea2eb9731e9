"""nats-server's stream backup archive (`NATSARC1`, server/archive in nats-server 2.15).

The uncompressed content of a stream snapshot: the magic `NATSARC1`, then
entries, each `uvarint(len(name)) varint(timestamp) uvarint(sequence)
uvarint(header_size) uvarint(payload_size) name payload` (the payload is
`header_size + payload_size` bytes; Go's varint is zig-zag). nats-server
writes `state.json` first (the stream state, `consumers` = how many consumer
entries follow), then `consumers/<name>` (`{"config", "state"}`), then one
entry per message (name = subject, sequence, timestamp in ns, payload =
headers + data), then an all-zero entry with an empty name: end of backup.

`ArchiveReader.feed(bytes) -> list[Entry]` is sans-IO and bounded: an entry is
returned whole, so its size is checked against `max_entry` before anything
of it is buffered; a name longer than `MAX_NAME` is refused, as nats-server
does. Anything malformed raises `ArchiveError` naming the problem.
"""

from __future__ import annotations

from typing import Final, NamedTuple

MAGIC: Final = b"NATSARC1"
MAX_NAME: Final = 1 << 20  # nats-server's maxNameLen


class ArchiveError(ValueError):
    """The bytes are not a valid backup archive."""


class Entry(NamedTuple):
    name: str
    timestamp: int
    sequence: int
    header_size: int
    payload: bytes

    @property
    def end(self) -> bool:
        """The end-of-backup sentinel."""
        return not self.name and not self.sequence and not self.timestamp and not self.payload


def _put_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_entry(name: str, timestamp: int, sequence: int, header: bytes, data: bytes) -> bytes:
    raw = name.encode()
    out = bytearray()
    _put_uvarint(out, len(raw))
    _put_uvarint(out, (timestamp << 1) ^ (timestamp >> 63))  # zig-zag, as Go's PutVarint
    _put_uvarint(out, sequence)
    _put_uvarint(out, len(header))
    _put_uvarint(out, len(data))
    out += raw
    out += header
    out += data
    return bytes(out)


def end_entry() -> bytes:
    return encode_entry("", 0, 0, b"", b"")


class _Short(Exception):
    """Not enough bytes buffered yet."""


def _uvarint(buf: bytearray, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise _Short
        b = buf[pos]
        pos += 1
        if shift == 63 and b > 1:
            raise ArchiveError("invalid archive: varint overflows 64 bits")
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ArchiveError("invalid archive: varint overflows 64 bits")


class ArchiveReader:
    """Incremental reader of a `NATSARC1` archive (module docstring)."""

    def __init__(self, max_entry: int) -> None:
        self.max_entry = max_entry
        self._buf = bytearray()
        self._seen_magic = False
        self.finished = False  # the end sentinel was read

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[Entry]:
        if self.finished:
            if data:
                raise ArchiveError("invalid archive: data after the end of backup")
            return []
        self._buf += data
        buf = self._buf
        out: list[Entry] = []
        pos = 0
        if not self._seen_magic:
            if len(buf) < len(MAGIC):
                return out
            if bytes(buf[:len(MAGIC)]) != MAGIC:
                raise ArchiveError("invalid archive: it does not start with NATSARC1")
            self._seen_magic = True
            pos = len(MAGIC)
        while pos < len(buf) and not self.finished:
            try:
                name_len, p = _uvarint(buf, pos)
                zz, p = _uvarint(buf, p)
                sequence, p = _uvarint(buf, p)
                header_size, p = _uvarint(buf, p)
                payload_size, p = _uvarint(buf, p)
            except _Short:
                break
            if name_len > MAX_NAME:
                raise ArchiveError(f"invalid archive: entry name of {name_len} bytes")
            total = header_size + payload_size
            if total > self.max_entry:
                raise ArchiveError(
                    f"invalid archive: entry of {total} bytes exceeds the limit of "
                    f"{self.max_entry} bytes"
                )
            if len(buf) - p < name_len + total:
                break
            try:
                name = bytes(buf[p:p + name_len]).decode()
            except UnicodeDecodeError:
                raise ArchiveError("invalid archive: entry name is not UTF-8") from None
            p += name_len
            entry = Entry(name, (zz >> 1) ^ -(zz & 1), sequence, header_size,
                          bytes(buf[p:p + total]))
            pos = p + total
            out.append(entry)
            if entry.end:
                self.finished = True
        del buf[:pos]
        if self.finished and buf:
            raise ArchiveError("invalid archive: data after the end of backup")
        return out
