"""The S2 stream format (klauspost/compress s2) that nats-server's snapshots use.

nats-server compresses a stream snapshot with `s2.NewWriter` and restores one
with `s2.NewReader`. The framing is Snappy's: a stream identifier chunk
(`ff 06 00 00` + `S2sTwO`, or `sNaPpY` for a Snappy stream, which the s2
reader accepts too), then chunks of `type(1) length(3, LE)`; data chunks start
with the masked CRC-32C of their uncompressed bytes (4, LE). Type 0x00 is a
compressed block (a uvarint length, then S2 ops: Snappy's plus the "repeat
last offset" copy), 0x01 raw bytes, 0xfe padding and 0x80-0xfd skippable;
0x02-0x7f are reserved unskippable (an error).

`FrameDecoder.feed(bytes) -> list[bytes]` is sans-IO: it keeps at most one
chunk's bytes (its 3-byte length bounds it to 16 MiB; a block decodes to at
most 4 MiB, more is refused) and raises
`S2Error` naming the problem for anything malformed. `FrameEncoder.encode`
writes Snappy framing (blocks of at most 64 KiB) that nats-server's s2 reader
accepts: compressed with cramjam when it is installed (the `snapshot` extra),
else as raw chunks. CRC-32C comes from the `crc32c` package when installed,
else from a table here (correct, slower).
"""

from __future__ import annotations

import struct
from typing import Any, Final

try:  # the `snapshot` extra: fast CRC-32C
    from crc32c import crc32c as _crc32c_fast
except ImportError:  # pragma: no cover - exercised without the extra
    _crc32c_fast = None  # type: ignore[assignment]

try:  # the `snapshot` extra: Snappy blocks in Rust
    import cramjam as _cramjam
except ImportError:  # pragma: no cover - exercised without the extra
    _cramjam = None  # type: ignore[assignment]

S2_MAGIC: Final = b"\xff\x06\x00\x00S2sTwO"
SNAPPY_MAGIC: Final = b"\xff\x06\x00\x00sNaPpY"
MAX_BLOCK: Final = 4 << 20  # s2's largest block (uncompressed)
MAX_SNAPPY_BLOCK: Final = 64 << 10
_U32 = struct.Struct("<I")


class S2Error(ValueError):
    """The bytes are not a valid S2 (or Snappy) framed stream."""


def _table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE: Final = _table()


def crc32c(data: bytes | bytearray | memoryview) -> int:
    if _crc32c_fast is not None:
        return int(_crc32c_fast(bytes(data)))
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes | bytearray | memoryview) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _uvarint(src: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(src) or shift > 63:
            raise S2Error("corrupt block: bad length varint")
        b = src[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def decode_block(src: bytes, limit: int = MAX_BLOCK) -> bytes:
    """One S2 (or Snappy) block; S2Error when corrupt or longer than `limit`."""
    size, s = _uvarint(src, 0)
    if size > limit:
        raise S2Error(f"corrupt block: {size} bytes decoded exceed the {limit}-byte block limit")
    if _cramjam is not None:
        try:  # most blocks use only Snappy's ops; S2's repeat copy makes this refuse
            out = bytes(_cramjam.snappy.decompress_raw(src))
            if len(out) == size:
                return out
        except Exception:  # cramjam's DecompressionError: fall back to the S2 decoder
            pass
    dst = bytearray()
    offset = 0
    n = len(src)
    while s < n:
        tag = src[s]
        kind = tag & 3
        if kind == 0:  # literal
            x = tag >> 2
            if x < 60:
                s += 1
            else:
                extra = x - 59
                if s + 1 + extra > n:
                    raise S2Error("corrupt block: truncated literal length")
                x = int.from_bytes(src[s + 1:s + 1 + extra], "little")
                s += 1 + extra
            length = x + 1
            if s + length > n or len(dst) + length > size:
                raise S2Error("corrupt block: literal runs past the end")
            dst += src[s:s + length]
            s += length
            continue
        if kind == 1:
            if s + 2 > n:
                raise S2Error("corrupt block: truncated copy")
            toffset = ((tag & 0xE0) << 3) | src[s + 1]
            length = (tag >> 2) & 7
            s += 2
            if toffset == 0:  # S2: repeat the last offset
                if length == 5:
                    if s + 1 > n:
                        raise S2Error("corrupt block: truncated repeat")
                    length = src[s] + 4
                    s += 1
                elif length == 6:
                    if s + 2 > n:
                        raise S2Error("corrupt block: truncated repeat")
                    length = int.from_bytes(src[s:s + 2], "little") + (1 << 8)
                    s += 2
                elif length == 7:
                    if s + 3 > n:
                        raise S2Error("corrupt block: truncated repeat")
                    length = int.from_bytes(src[s:s + 3], "little") + (1 << 16)
                    s += 3
            else:
                offset = toffset
            length += 4
        elif kind == 2:
            if s + 3 > n:
                raise S2Error("corrupt block: truncated copy")
            offset = int.from_bytes(src[s + 1:s + 3], "little")
            length = 1 + (tag >> 2)
            s += 3
        else:
            if s + 5 > n:
                raise S2Error("corrupt block: truncated copy")
            offset = int.from_bytes(src[s + 1:s + 5], "little")
            length = 1 + (tag >> 2)
            s += 5
        d = len(dst)
        if offset <= 0 or offset > d or d + length > size:
            raise S2Error("corrupt block: copy out of range")
        start = d - offset
        if offset >= length:
            dst += dst[start:start + length]
        else:
            pattern = bytes(dst[start:])
            dst += (pattern * (length // offset + 1))[:length]
    if len(dst) != size:
        raise S2Error(f"corrupt block: decoded {len(dst)} bytes, its header says {size}")
    return bytes(dst)


def encode_block(data: bytes) -> bytes | None:
    """A Snappy block for `data` (None when cramjam is not installed)."""
    if _cramjam is None:
        return None
    return bytes(_cramjam.snappy.compress_raw(data))


class FrameDecoder:
    """Incremental reader of an S2/Snappy framed stream (module docstring)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._seen_magic = False
        self._snappy = False

    @property
    def pending(self) -> int:
        """Bytes buffered that do not yet make a whole chunk."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out: list[bytes] = []
        buf = self._buf
        pos = 0
        while len(buf) - pos >= 4:
            ctype = buf[pos]
            clen = buf[pos + 1] | (buf[pos + 2] << 8) | (buf[pos + 3] << 16)
            if not self._seen_magic and ctype != 0xFF:
                raise S2Error("not an S2 stream: it does not start with the stream identifier")
            if len(buf) - pos - 4 < clen:
                break
            body = bytes(buf[pos + 4:pos + 4 + clen])
            pos += 4 + clen
            out.extend(self._chunk(ctype, body))
        del buf[:pos]
        return out

    def _chunk(self, ctype: int, body: bytes) -> list[bytes]:
        if ctype == 0xFF:
            ident = b"\xff\x06\x00\x00" + body
            if ident == S2_MAGIC:
                self._snappy = False
            elif ident == SNAPPY_MAGIC:
                self._snappy = True
            else:
                raise S2Error("not an S2 stream: unknown stream identifier")
            self._seen_magic = True
            return []
        if ctype in (0x00, 0x01):
            if len(body) < 4:
                raise S2Error("corrupt chunk: shorter than its checksum")
            want = _U32.unpack_from(body)[0]
            limit = MAX_SNAPPY_BLOCK if self._snappy else MAX_BLOCK
            if ctype == 0x00:
                data = decode_block(body[4:], limit)
            else:
                data = body[4:]
                if len(data) > limit:
                    raise S2Error("corrupt chunk: raw chunk exceeds the block limit")
            if masked_crc(data) != want:
                raise S2Error("corrupt chunk: checksum mismatch")
            return [data] if data else []
        if ctype == 0xFE or 0x80 <= ctype <= 0xFD:
            return []
        raise S2Error(f"unsupported chunk type 0x{ctype:02x}")


class FrameEncoder:
    """Writes Snappy framing (which nats-server's s2 reader accepts)."""

    def __init__(self) -> None:
        self._started = False

    def encode(self, data: bytes | bytearray | memoryview) -> bytes:
        out = bytearray()
        if not self._started:
            out += SNAPPY_MAGIC
            self._started = True
        view = memoryview(data)
        for i in range(0, len(view), MAX_SNAPPY_BLOCK):
            block = bytes(view[i:i + MAX_SNAPPY_BLOCK])
            crc = _U32.pack(masked_crc(block))
            packed = encode_block(block)
            if packed is not None and len(packed) < len(block) - len(block) // 8:
                ctype, body = 0x00, packed
            else:
                ctype, body = 0x01, block
            clen = 4 + len(body)
            out += bytes((ctype, clen & 0xFF, (clen >> 8) & 0xFF, clen >> 16))
            out += crc
            out += body
        return bytes(out)


def available() -> dict[str, Any]:
    """Which fast paths are installed (for logs and docs/performance.md's claims)."""
    return {"crc32c": _crc32c_fast is not None, "cramjam": _cramjam is not None}
