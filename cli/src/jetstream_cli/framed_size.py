"""The uncompressed size of an S2 (or Snappy) framed stream, counted as its bytes arrive,
without decompressing: what `stream backup` measures its progress in, as natscli does.

A stream snapshot is S2 framing (Snappy's): chunks of `type(1) length(3, little-endian)`;
a raw data chunk (0x01) holds a 4-byte CRC then its bytes; a compressed one (0x00) holds the
CRC then a block that starts with its uncompressed length as a uvarint. Other chunk types
(the stream identifier, padding, skippable) hold no data. So the uncompressed size is read
from at most 14 bytes at the start of each chunk.

`FramedSize.feed(bytes)` takes the stream in pieces of any size (a chunk's head may span
pieces) and keeps at most one chunk head; it never raises: malformed input counts as
nothing more, because the count only feeds a progress line, never the backup itself.
"""

from __future__ import annotations

from typing import Final

_RAW: Final = 0x01
_COMPRESSED: Final = 0x00
_HEADER: Final = 4  # type + 3-byte length
_CRC: Final = 4
_MAX_UVARINT: Final = 10


def _uvarint(data: bytes | bytearray) -> int | None:
    value = shift = 0
    for b in data[:_MAX_UVARINT]:
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value
        shift += 7
    return None


class FramedSize:
    """Counts `uncompressed`, the bytes the framed stream fed so far decodes to."""

    def __init__(self) -> None:
        self.uncompressed = 0
        self._head = bytearray()  # the start of the chunk being read
        self._skip = 0  # bytes of the current chunk still to pass over

    def feed(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            need = self._head_needed()
            take = min(need - len(self._head), end - pos)
            self._head += data[pos:pos + take]
            pos += take
            if len(self._head) == self._head_needed():
                self._count_chunk()

    def _head_needed(self) -> int:
        if len(self._head) < _HEADER:
            return _HEADER
        if self._head[0] == _COMPRESSED:
            return _HEADER + min(self._length(), _CRC + _MAX_UVARINT)
        return _HEADER

    def _length(self) -> int:
        return int.from_bytes(self._head[1:_HEADER], "little")

    def _count_chunk(self) -> None:
        kind, length = self._head[0], self._length()
        if kind == _RAW:
            self.uncompressed += max(0, length - _CRC)
        elif kind == _COMPRESSED:
            self.uncompressed += _uvarint(self._head[_HEADER + _CRC:]) or 0
        self._skip = length - (len(self._head) - _HEADER)
        self._head.clear()
