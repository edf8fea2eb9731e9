"""How natscli prints a message's headers and body: the headers of a stored message decoded
from their wire block (`NATS/1.0` status line first), the body as text or `nil body`. Used by
`stream get` / `stream view` and by `sub` / `req`."""

from __future__ import annotations

from nats.aio.msg import Msg

from ..session import out


def decode_headers(raw: bytes) -> list[tuple[str, str]]:
    lines = raw.decode("utf-8", "replace").split("\r\n")
    result: list[tuple[str, str]] = []
    if lines and len(lines[0]) > len("NATS/1.0"):
        status = lines[0][len("NATS/1.0"):].strip()
        result.append(("Status", status[:3]))
        if status[3:].strip():
            result.append(("Description", status[3:].strip()))
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep and key:
            result.append((key, value.strip()))
    return result


def body_text(data: bytes) -> str:
    """natscli's outPutMSGBody: `nil body` for an empty one, the text otherwise."""
    if not data:
        return "nil body"
    return data.decode("utf-8", "replace").rstrip("\n")


def print_headers_and_body(msg: Msg, headers_only: bool) -> None:
    if msg.headers:
        for key, value in msg.headers.items():
            out(f"{key}: {value}")
        out()
    if not headers_only:
        out(body_text(msg.data))
        out()
