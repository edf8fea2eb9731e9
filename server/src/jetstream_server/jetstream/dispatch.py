"""The `$JS.API.>` entry: parse the subject, route, answer in the JSON envelope.

`dispatch(engine, subject, reply, headers, payload)` strips the API prefix
(`$JS.API.` or `$JS.<domain>.API.`), resolves the handler through
api/registry.py, runs it and publishes its answer to `reply` with
`"type": "io.nats.jetstream.api.v1.<name>_response"` first. An `ApiError`
becomes `{"type", "error": {code, err_code, description}}`; any other
exception is logged with its traceback and answered as a 500 error, so
nothing escapes into the broker. Subjects no handler serves get no answer
(nats-server answers them with silence too).

`request_body(req)` (api/common.py, re-exported here) is the one place request
JSON is decoded: empty, `{}` and `null` bodies are an empty dict; malformed
JSON is 400 10025 "invalid JSON: ...".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from jetstream_server.jetstream.api import handlers as _handlers  # noqa: F401  (registers the routes)
from jetstream_server.jetstream.api.common import request_body  # noqa: F401  (re-exported)
from jetstream_server.jetstream.api.registry import TYPE_PREFIX, ApiRequest, resolve
from jetstream_server.jetstream.errors import ApiError, Err

if TYPE_CHECKING:
    from jetstream_server.jetstream.engine import JetStream

logger = logging.getLogger(__name__)

API_PREFIX = "$JS.API."

# Fields nats-server keeps in an error response of some types (zero values of
# the response struct's non-omitempty fields). Keyed by response type name.
_PAGED_ZERO = {"total": 0, "offset": 0, "limit": 0}
ERROR_EXTRAS: dict[str, dict[str, object]] = {
    "stream_info": dict(_PAGED_ZERO),
    "stream_names": {**_PAGED_ZERO, "streams": None},
    "stream_list": {**_PAGED_ZERO, "streams": None},
    "stream_purge": {"purged": 0},
    "consumer_names": {**_PAGED_ZERO, "consumers": []},
    "consumer_list": {**_PAGED_ZERO, "consumers": []},
    "consumer_pause": {"paused": False, "pause_until": "0001-01-01T00:00:00Z"},
    "consumer_reset": {"reset_seq": 0},
}
# Direct gets are answered as messages and not counted as API calls.
_UNCOUNTED = {"direct_get"}


def api_tokens(subject: str, domain: str | None = None) -> tuple[str, ...] | None:
    """The tokens after the API prefix, or None when `subject` is not an API subject."""
    if subject.startswith(API_PREFIX):
        rest = subject[len(API_PREFIX):]
    elif domain and subject.startswith(f"$JS.{domain}.API."):
        rest = subject[len(f"$JS.{domain}.API."):]
    else:
        return None
    if not rest:
        return None
    return tuple(rest.split("."))


def response_type(name: str) -> str:
    return TYPE_PREFIX + (name if name.endswith("_response") else name + "_response")


def dispatch(
    engine: JetStream, subject: str, reply: str | None, headers: bytes | None, payload: bytes
) -> None:
    tokens = api_tokens(subject, engine.domain)
    if tokens is None:
        return
    found = resolve(tokens)
    if found is None:
        logger.debug("no JetStream API handler for %s", subject)
        return
    route, params = found
    name = route.response_type.removesuffix("_response")
    req = ApiRequest(subject, tokens, params, reply, headers, payload)
    failed = True
    try:
        body = route.handler(engine, req)
        failed = False
    except ApiError as exc:
        body = {"error": exc.to_json(), **ERROR_EXTRAS.get(name, {})}
    except Exception as exc:  # answered as a 500 with the reason; the server keeps serving
        logger.exception("JetStream API %s failed", subject)
        error = ApiError(Err.STREAM_GENERAL_ERROR, err=f"internal error: {exc}")
        body = {"error": error.to_json(), **ERROR_EXTRAS.get(name, {})}
    if name not in _UNCOUNTED:
        engine.api_total += 1
        engine.api_errors += int(failed)
    if body is None:
        return
    engine.respond(reply, {"type": response_type(route.response_type), **body})
