"""Secrets in option values, and how they are shown: never.

Passwords and tokens can sit inside a server URL (`nats://user:pass@host`,
`nats://token@host`); `redact_url` replaces them by `***` (keeping the user
name, which helps and is not a secret). Every message, log line and repr that
names a server goes through it; the option objects' reprs show `***` for the
password, token and user JWT options too (connection.py).
"""

from __future__ import annotations

from typing import Final

REDACTED: Final = "***"


def redact_url(url: str) -> str:
    """`url` with its password (or a token in the user part) replaced by `***`."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    netloc, slash, tail = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if not at:
        return url
    user, colon, _ = userinfo.partition(":")
    # nats://token@host carries a token in the user part: a secret too
    shown = f"{user}:{REDACTED}" if colon else REDACTED
    return f"{scheme}{sep}{shown}@{hostport}{slash}{tail}"


def redact_text(text: str, secrets: tuple[str | None, ...]) -> str:
    """`text` with every occurrence of each non-empty secret replaced by `***`.

    For texts the connector does not compose itself (a server's error line,
    an exception from the standard library) that might echo a value back.
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text
