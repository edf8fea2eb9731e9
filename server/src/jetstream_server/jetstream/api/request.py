"""One `$JS.API` request as a handler sees it, and the one way to read its JSON body.

`ApiRequest` carries the subject, its tokens after the API prefix, what the
route's wildcards captured (`params`), the reply subject, headers and payload.
`request_body(req)` is the one place request JSON is decoded: empty, `{}` and
`null` bodies are an empty dict; malformed JSON or anything but an object is
400 10025 "invalid JSON: ...". The `*_field` helpers read typed fields with
the same error, naming the field.

What nats-server does with a body depends on the route, and so it does here:
routes that take none (STREAM.DELETE, CONSUMER.INFO, CONSUMER.DELETE) refuse
any but an empty one with 400 10038 (`require_empty_request`; empty is no
bytes, `{}` or a JSON object without keys, as its `isEmptyRequest`); routes
whose body is optional (names, lists, infos, purge, pause) read it only when it
starts like a JSON object or array (`optional_body`) and ignore anything else;
and with `fields` a body is decoded strictly, as nats-server's default strict
mode does: an unknown key is 400 10025 `json: unknown field "<key>"`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

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


def is_empty_request(payload: bytes) -> bool:
    """nats-server's isEmptyRequest: no bytes, `{}`, or a JSON object without keys
    (`null`, blanks and anything else are not empty)."""
    if not payload or payload == b"{}":
        return True
    if payload.lstrip()[:1] != b"{":
        return False
    try:
        value = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(value, dict) and not value


def require_empty_request(req: ApiRequest) -> None:
    """A route that takes no body: anything but an empty one is 400 10038."""
    if not is_empty_request(req.payload):
        raise ApiError(Err.NOT_EMPTY_REQUEST)


def _is_json_object_or_array(payload: bytes) -> bool:
    """nats-server's isJSONObjectOrArray: the first non-blank byte is `{` or `[`."""
    return payload.lstrip(b" \t\r\n")[:1] in (b"{", b"[")


def optional_body(req: ApiRequest, fields: frozenset[str]) -> dict[str, Any]:
    """A route whose body is optional: decoded (strictly) only when it looks like
    JSON, else ignored, as nats-server does ({})."""
    if not _is_json_object_or_array(req.payload):
        return {}
    return request_body(req, fields)


def request_body(req: ApiRequest, fields: frozenset[str] | None = None) -> dict[str, Any]:
    """The request's JSON object ({} for an empty body); ApiError INVALID_JSON otherwise.
    With `fields`, a key not among them is refused (nats-server's strict decoding,
    which matches names without regard to case, as Go's decoder)."""
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
    if fields is not None:
        for key in body:
            if key not in fields and key.lower() not in fields:
                raise ApiError(Err.INVALID_JSON, err=f'json: unknown field "{key}"')
    decoded: dict[str, Any] = body
    if _LONE_SURROGATE_ESCAPE.search(payload):
        decoded = _replace_lone_surrogates(decoded)
    return decoded


# the JSON fields of nats-server's request types (jetstream_api.go)
PAGED_FIELDS: Final = frozenset({"offset"})
STREAM_NAMES_FIELDS: Final = PAGED_FIELDS | {"subject"}
STREAM_INFO_FIELDS: Final = PAGED_FIELDS | {"deleted_details", "subjects_filter"}
STREAM_PURGE_FIELDS: Final = frozenset({"seq", "filter", "keep"})
MSG_GET_FIELDS: Final = frozenset({
    "seq", "last_by_subj", "next_by_subj", "batch", "max_bytes", "start_time", "multi_last",
    "up_to_seq", "up_to_time", "no_hdr",
})
MSG_DELETE_FIELDS: Final = frozenset({"seq", "no_erase"})
CONSUMER_PAUSE_FIELDS: Final = frozenset({"pause_until"})
CONSUMER_CREATE_FIELDS: Final = frozenset({"stream_name", "config", "action", "pedantic"})
SNAPSHOT_FIELDS: Final = frozenset({
    "deliver_subject", "no_consumers", "chunk_size", "window_size", "jsck",
})
RESTORE_FIELDS: Final = frozenset({"config", "state"})


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
