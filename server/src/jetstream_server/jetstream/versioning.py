"""The nats-server version and JetStream API level this server advertises (ADR-44).

`SERVER_VERSION` is the nats-server release whose JetStream feature set the
bundled server implements (consumer reset came with 2.14); `API_LEVEL` is
that release's `JSApiLevel`. Both go into INFO, `/varz`, `/jsz` and
`$JS.API.INFO`, and into the metadata of the stream and consumer configs the
API answers with, as nats-server does (server/jetstream_versioning.go):

- ``_nats.req.level`` (static, stored with the config): the level the config's
  features need;
- ``_nats.ver`` and ``_nats.level`` (dynamic): added to create, update and info
  answers only, never stored; a client echoing them back has them dropped.

A request carrying ``Nats-Required-Api-Level`` above `API_LEVEL` (or not a
number) is refused with `JSRequiredApiLevelErr` (`required_level_refused`).

What of 2.14 is still missing is listed in docs/compatibility.md.
"""

from __future__ import annotations

from typing import Any, Final

from jetstream_server.core.headers import get_header

SERVER_VERSION: Final = "2.14.0"
API_LEVEL: Final = 4

REQUIRED_LEVEL_KEY: Final = "_nats.req.level"
VERSION_KEY: Final = "_nats.ver"
LEVEL_KEY: Final = "_nats.level"
DYNAMIC_KEYS: Final = (VERSION_KEY, LEVEL_KEY)
REQUIRED_LEVEL_HEADER: Final = "Nats-Required-Api-Level"


def without_dynamic(metadata: dict[str, str]) -> dict[str, str]:
    """`metadata` without the answer-only keys (what is stored)."""
    return {k: v for k, v in metadata.items() if k not in DYNAMIC_KEYS}


def with_dynamic(config_json: dict[str, Any]) -> dict[str, Any]:
    """A config as answered by create, update and info: its metadata with
    ``_nats.ver`` and ``_nats.level``, keys sorted as nats-server's JSON has them."""
    metadata = dict(config_json.get("metadata") or {})
    metadata[VERSION_KEY] = SERVER_VERSION
    metadata[LEVEL_KEY] = str(API_LEVEL)
    out = dict(config_json)
    out["metadata"] = dict(sorted(metadata.items()))
    return out


def required_level_refused(headers: bytes | None) -> bool:
    """True when the request asks for an API level this server does not have."""
    if not headers:
        return False
    value = get_header(headers, REQUIRED_LEVEL_HEADER)
    if value is None or value == "":
        return False
    try:
        return int(value.strip()) > API_LEVEL
    except ValueError:
        return True
