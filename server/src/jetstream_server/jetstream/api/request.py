"""One `$JS.API` request as a handler sees it, and the one way to read its JSON body.

`ApiRequest` carries the subject, its tokens after the API prefix, what the
route's wildcards captured (`params`), the reply subject, headers and payload.
`request_body(req)` is the one place request JSON is decoded: empty, `{}` and
`null` bodies are an empty dict; malformed JSON or anything but an object is
400 10025 "invalid JSON: ...". The `*_field` helpers read typed fields with
the same error, naming the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from jetstream_server.core.router import ClientOrigin
from jetstream_server.jetstream.errors import ApiError, Err


@dataclass(frozen=True, slots=True)
class ApiRequest:
    subject: str  # the full subject, e.g. "$JS.API.STREAM.INFO.ORDERS"
    tokens: tuple[str, ...]  # tokens after the API prefix: ("STREAM", "INFO", "ORDERS")
    params: tuple[str, ...]  # what the pattern's wildcards captured: ("ORDERS",)
    reply: str | None
    headers: bytes | None
    payload: bytes
    origin: ClientOrigin | None = None  # the requesting client (for an answer sent later's audit)


def request_body(req: ApiRequest) -> dict[str, Any]:
    """The request's JSON object ({} for an empty body); ApiError INVALID_JSON otherwise."""
    payload = req.payload.strip()
    if not payload or payload == b"null":
        return {}
    try:
        body = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(Err.INVALID_JSON, err=str(exc)) from None
    except RecursionError:  # deeper than the decoder's stack (nats-server: 10000 levels)
        raise ApiError(Err.INVALID_JSON, err="exceeded max depth") from None
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise ApiError(Err.INVALID_JSON, err=f"expected a JSON object, got {type(body).__name__}")
    fields: dict[str, Any] = body
    if _LONE_SURROGATE_ESCAPE.search(payload):
        fields = _replace_lone_surrogates(fields)
    return fields


# `\ud800` alone is valid JSON but no UTF-8 can carry it: Go's decoder (nats-server)
# reads it as U+FFFD, so does this one (before: "internal error" wherever it was encoded)
_LONE_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    return value


def int_field(body: dict[str, Any], key: str, default: int = 0) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(Err.INVALID_JSON, err=f"field {key!r} must be an integer, got {value!r}")
    if not -(1 << 63) <= value < (1 << 64):
        raise ApiError(Err.INVALID_JSON, err=f"field {key!r} is out of range: {value}")
    return value


def uint_field(body: dict[str, Any], key: str) -> int:
    """An unsigned integer field (Go's uint64: a negative value does not decode)."""
    value = int_field(body, key)
    if value < 0:
        raise ApiError(Err.INVALID_JSON, err=f"field {key!r} must not be negative, got {value}")
    return value


def str_field(body: dict[str, Any], key: str) -> str:
    value = body.get(key) or ""
    if not isinstance(value, str):
        raise ApiError(Err.INVALID_JSON, err=f"field {key!r} must be a string, got {value!r}")
    return value


def offset_of(body: dict[str, Any]) -> int:
    return max(0, int_field(body, "offset"))  # nats-server treats a bad offset as 0
