"""The `Nats-Stream-Source` header and the clean-up of a sourced message's headers.

Format (nats-server's genSourceHeader, 2.10+):
`<stream> <origin seq> <filter> <destination> <origin subject> <identity>`,
where filter and destination are the source's index-name parts (several
transforms joined by form feeds) and identity is nats-server's hash of the
origin's creation time (a recreated origin has another). Pure functions.
"""

from __future__ import annotations

import hashlib

from jetstream_server.core.gotime import rfc3339_ns
from jetstream_server.core.headers import VERSION_LINE, get_header

STREAM_SOURCE = "Nats-Stream-Source"
_DROPPED_PREFIXES = (b"nats-expected-", b"nats-batch-")
_STREAM_SOURCE_LOWER = STREAM_SOURCE.lower().encode()


_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def stream_identity(created: str | int) -> str:
    """nats-server's stream identity: getHash of the creation time (RFC 3339, UTC)."""
    text = rfc3339_ns(created) if isinstance(created, int) else created
    digest = hashlib.sha256(text.encode()).digest()
    return "".join(_DIGITS[b % 62] for b in digest[:8])


def source_header(index_name: str, origin_seq: int, origin_subject: str, identity: str = "") -> str:
    name, filters, dests = index_name.split(" ", 2)
    value = f"{name} {origin_seq} {filters} {dests} {origin_subject}"
    return f"{value} {identity}" if identity else value


def parse_source_header(value: str) -> tuple[str, int] | None:
    """(index name, origin sequence) of a header value, None when it is not one."""
    fields = value.split(" ")
    if len(fields) < 4 or not fields[1].isdigit():
        return None
    return f"{fields[0]} {fields[2]} {fields[3]}", int(fields[1])


def stored_source(headers: bytes | None) -> tuple[str, int] | None:
    """The source progress a stored message records, if any."""
    value = get_header(headers, STREAM_SOURCE)
    return None if value is None else parse_source_header(value)


def stored_identity(headers: bytes | None) -> str:
    """The origin identity a stored message's source header records ("" when none)."""
    value = get_header(headers, STREAM_SOURCE)
    fields = value.split(" ") if value else []
    return fields[5] if len(fields) >= 6 else ""


def sourced_headers(headers: bytes | None, value: str) -> bytes:
    """The origin's headers without an older `Nats-Stream-Source` (daisy
    chains), `Nats-Expected-*` and `Nats-Batch-*`, plus the new source header."""
    kept: list[bytes] = []
    if headers and headers.startswith(VERSION_LINE):
        lines = headers.split(b"\r\n")
        for line in lines[1:]:
            if not line:
                continue
            name = line.partition(b":")[0].strip().lower()
            if name == _STREAM_SOURCE_LOWER or name.startswith(_DROPPED_PREFIXES):
                continue
            kept.append(line)
        first = lines[0]
    else:
        first = VERSION_LINE
    kept.append(f"{STREAM_SOURCE}: {value}".encode())
    return first + b"\r\n" + b"\r\n".join(kept) + b"\r\n\r\n"
