"""NATS protocol frames as the lean client sees them: parsing server operations, header blocks.

Pure (bytes in, values out; no socket): `parse_frames(buf, pos)` returns the
complete frames of `buf[pos:]` and where it stopped; a frame is a tuple
`(op, subject, sid, reply, header_bytes, payload)` with `op` one of
``b"MSG"`` (HMSG too: its header block in `header_bytes`), ``b"PING"``,
``b"PONG"``, ``b"+OK"``, ``b"-ERR"``, ``b"INFO"``. `parse_headers` reads a
`NATS/1.0[ code[ description]]` block into (status, description, items);
`encode_headers` writes one. Anything that is not a NATS server operation
raises `NatsError` naming the line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from spark_jetstream.client.errors import NatsError

__all__ = ["ACK_PREFIX", "CRLF", "Frame", "encode_headers", "parse_frames", "parse_headers"]

CRLF: Final = b"\r\n"
# how every JetStream ack reply subject starts (`$JS.ACK.<stream>.<consumer>...`)
ACK_PREFIX: Final = b"$JS.ACK."

# A frame: (op, subject, sid, reply, header_bytes, payload)
Frame = tuple[bytes, bytes, bytes, bytes, bytes, bytes]


def parse_frames(buf: bytes, pos: int = 0, max_frames: int = 0) -> tuple[list[Frame], int]:
    """Parse every complete frame in `buf[pos:]` (at most `max_frames` if > 0);
    return them and where parsing stopped.

    Pure and incremental: an incomplete frame at the end is left for the next
    call (the returned position points at its start). Raises `NatsError` on a
    line that is not a NATS server operation.
    """
    frames: list[Frame] = []
    append = frames.append
    find = buf.find
    n = len(buf)
    empty = b""
    while not max_frames or len(frames) < max_frames:
        nl = find(CRLF, pos)
        if nl < 0:
            break
        c = buf[pos]
        if c == 77 and buf.startswith(b"MSG ", pos):  # MSG subject sid [reply] size
            parts = buf[pos + 4 : nl].split()
            start = nl + 2
            end = start + int(parts[-1])
            if end + 2 > n:
                break
            reply = parts[2] if len(parts) == 4 else empty
            append((b"MSG", parts[0], parts[1], reply, empty, buf[start:end]))
            pos = end + 2
        elif c == 72 and buf.startswith(b"HMSG ", pos):  # HMSG subject sid [reply] hdr_size total_size
            parts = buf[pos + 5 : nl].split()
            start = nl + 2
            hend = start + int(parts[-2])
            end = start + int(parts[-1])
            if end + 2 > n:
                break
            reply = parts[2] if len(parts) == 5 else empty
            append((b"MSG", parts[0], parts[1], reply, buf[start:hend], buf[hend:end]))
            pos = end + 2
        else:
            line = buf[pos:nl]
            op, _, rest = line.partition(b" ")
            op = op.upper()
            if op in (b"PING", b"PONG", b"+OK"):
                append((op, empty, empty, empty, empty, empty))
            elif op in (b"-ERR", b"INFO"):
                append((op, empty, empty, empty, empty, rest))
            else:
                raise NatsError(f"unexpected protocol line from server: {line[:200]!r}")
            pos = nl + 2
    return frames, pos


def parse_headers(block: bytes) -> tuple[int | None, str, list[tuple[str, str]]]:
    """`NATS/1.0[ code[ description]]` + `Name: value` lines -> (status, description, items)."""
    lines = block.split(CRLF)
    first = lines[0]
    if not first.startswith(b"NATS/1.0"):
        raise NatsError(f"bad header block: {first[:80]!r}")
    status: int | None = None
    description = ""
    rest = first[8:].strip()
    if rest:
        code, _, desc = rest.partition(b" ")
        status = int(code)
        description = desc.decode("utf-8", "replace").strip()
    items: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        items.append((name.decode("utf-8", "replace").strip(), value.decode("utf-8", "replace").strip()))
    return status, description, items


def encode_headers(headers: Sequence[tuple[str, str]]) -> bytes:
    out = [b"NATS/1.0\r\n"]
    for name, value in headers:
        out.append(f"{name}: {value}\r\n".encode())
    out.append(CRLF)
    return b"".join(out)
