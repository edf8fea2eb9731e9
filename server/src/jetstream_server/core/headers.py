"""NATS message headers: the `NATS/1.0` block carried by HPUB and HMSG.

Wire form: ``NATS/1.0[ <code>[ <description>]]\r\n(Name: value\r\n)*\r\n``.
Header names keep their case (NATS headers are case-sensitive on the wire,
though JetStream looks its own up exactly as spelled, e.g. ``Nats-Msg-Id``).
A name may appear several times; order is kept.

This module is pure: bytes in, values out. Parsing raises `HeaderError` on a
block that does not start with the version line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

VERSION_LINE = b"NATS/1.0"


class HeaderError(ValueError):
    """A header block that is not NATS/1.0 headers."""


@dataclass(slots=True)
class Headers:
    """Parsed headers: an optional status line plus ordered (name, value) pairs."""

    status: int | None = None
    description: str = ""
    items: list[tuple[str, str]] = field(default_factory=list)

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of `name` (exact spelling first, then case-insensitive)."""
        for key, value in self.items:
            if key == name:
                return value
        lowered = name.lower()
        for key, value in self.items:
            if key.lower() == lowered:
                return value
        return default

    def get_all(self, name: str) -> list[str]:
        return [value for key, value in self.items if key == name]

    def to_multimap(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key, value in self.items:
            out.setdefault(key, []).append(value)
        return out


def parse_headers(block: bytes) -> Headers:
    """Parse a raw header block (as carried in HPUB/HMSG) into `Headers`."""
    if not block.startswith(VERSION_LINE):
        raise HeaderError("header block does not start with NATS/1.0")
    lines = block.split(b"\r\n")
    first = lines[0][len(VERSION_LINE):].strip()
    headers = Headers()
    if first:
        code, _, desc = first.partition(b" ")
        if not code.isdigit():
            raise HeaderError(f"bad status line {lines[0]!r}")
        headers.status = int(code)
        headers.description = desc.decode("utf-8", "replace").strip()
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep or not name.strip():
            # nats-server tolerates odd lines; we skip them rather than fail a publish.
            continue
        headers.items.append(
            (name.strip().decode("utf-8", "replace"), value.strip().decode("utf-8", "replace"))
        )
    return headers


def encode_headers(
    items: Iterable[tuple[str, str]] | Mapping[str, str] = (),
    status: int | None = None,
    description: str = "",
) -> bytes:
    """Build a raw header block, with an optional status line."""
    first = VERSION_LINE
    if status is not None:
        first += b" %d" % status
        if description:
            first += b" " + description.encode()
    pairs = items.items() if isinstance(items, Mapping) else items
    body = b"".join(f"{k}: {v}\r\n".encode() for k, v in pairs)
    return first + b"\r\n" + body + b"\r\n"


def status_headers(status: int, description: str = "", **extra: str) -> bytes:
    """A status-only block such as ``NATS/1.0 404 No Messages``; extra headers by keyword
    use the keyword with underscores turned into dashes."""
    return encode_headers(
        [(k.replace("_", "-"), v) for k, v in extra.items()], status=status, description=description
    )


def get_header(block: bytes | None, name: str) -> str | None:
    """Look one header up in a raw block without building `Headers` when it is absent."""
    if not block or name.encode() not in block:
        return None
    try:
        return parse_headers(block).get(name)
    except HeaderError:
        return None
