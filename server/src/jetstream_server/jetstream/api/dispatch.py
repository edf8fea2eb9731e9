"""The `$JS.API.>` entry: parse the subject, route, answer in the JSON envelope.

`dispatch(host, subject, reply, headers, payload)` strips the API prefix
(`$JS.API.` or `$JS.<domain>.API.`), resolves the handler in the route table
(api/routes.py), runs it and publishes its answer to `reply` with
`"type": "io.nats.jetstream.api.v1.<name>_response"` first. An `ApiError`
becomes `{"type", "error": {code, err_code, description}}` plus the route's
`error_fields` (so is a `Nats-Required-Api-Level` above the server's level,
as nats-server); any other exception is logged with its traceback and
answered as a 500 error, so nothing escapes into the broker. A handler may
answer with a `SplicedAnswer` (api/spliced.py): it is started and sends the
answer itself over the next turns. A counted request is then audited (`$JS.EVENT.ADVISORY.API`, when someone listens). Subjects no
route serves get no answer (nats-server answers them with silence too).
"""

from __future__ import annotations

import logging

from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.replies import audit, respond
from jetstream_server.jetstream.api.request import ApiRequest
from jetstream_server.jetstream.api.routes import ROUTE_TABLE, RouteTable
from jetstream_server.jetstream.api.spliced import SplicedAnswer
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.versioning import required_level_refused

logger = logging.getLogger(__name__)

API_PREFIX = "$JS.API."
TYPE_PREFIX = "io.nats.jetstream.api.v1."


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
    host: ApiHost,
    subject: str,
    reply: str | None,
    headers: bytes | None,
    payload: bytes,
    table: RouteTable = ROUTE_TABLE,
) -> None:
    tokens = api_tokens(subject, host.settings.domain)
    if tokens is None:
        return
    found = table.resolve(tokens)
    if found is None:
        logger.debug("no JetStream API handler for %s", subject)
        return
    route, params = found
    origin = host.router.origin  # before the handler publishes anything
    req = ApiRequest(subject, tokens, params, reply, headers, payload, origin)
    failed = True
    try:
        if required_level_refused(headers):
            raise ApiError(Err.REQUIRED_API_LEVEL)
        body = route.handler(host, req)
        failed = False
    except ApiError as exc:
        body = {"error": exc.to_json(), **route.error_fields}
    except Exception as exc:  # a server bug: logged in full, answered without paths or trace
        logger.exception("JetStream API %s failed", subject)
        error = ApiError(Err.STREAM_GENERAL_ERROR, err=f"internal error: {type(exc).__name__}")
        body = {"error": error.to_json(), **route.error_fields}
    if route.counted:
        host.api_stats.total += 1
        host.api_stats.errors += int(failed)
    if body is None:
        return
    if isinstance(body, SplicedAnswer):  # a large answer, encoded over turns
        body.body = {"type": response_type(route.response), **body.body}
        body.start(host, reply, lambda text: audit(host, subject, payload, text, origin)
                   if route.counted else None)
        return
    response = {"type": response_type(route.response), **body}
    respond(host, reply, response)
    if route.counted:
        audit(host, subject, payload, response, origin)
