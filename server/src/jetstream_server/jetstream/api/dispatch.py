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
answer itself over the next turns. A handler may also be a generator of
steps (core/steps.py: a stream create of many subjects): its first step runs
at once, each further step on a later loop turn, and its return value is the
body; meanwhile every other request of the account waits in `api_queue`, in
order (at most `API_QUEUE_LIMIT`, then they are dropped with a warning, as
nats-server drops its queue), and the waiting ones run one per turn after it.
A counted request is then audited (`$JS.EVENT.ADVISORY.API`, when someone listens). Subjects no
route serves get no answer (nats-server answers them with silence too).
"""

from __future__ import annotations

import functools
import logging
from types import GeneratorType
from typing import Any, Final, cast

from jetstream_server.core.router import ClientOrigin
from jetstream_server.core.steps import Steps
from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.replies import audit, respond
from jetstream_server.jetstream.api.request import ApiRequest
from jetstream_server.jetstream.api.routes import ROUTE_TABLE, ApiBody, Route, RouteTable
from jetstream_server.jetstream.api.spliced import SplicedAnswer
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.versioning import required_level_refused

logger = logging.getLogger(__name__)

API_PREFIX = "$JS.API."
# nats-server's default: past it, the requests waiting are dropped (with a warning)
API_QUEUE_LIMIT: Final = 10_000


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
    origin = host.router.origin  # before anything publishes
    queue = host.api_queue
    if queue.busy:  # a request works in turns (or a backlog drains): wait behind it
        if len(queue.waiting) >= API_QUEUE_LIMIT:
            logger.warning(
                "JetStream API queue limit reached, dropping %d requests", len(queue.waiting)
            )
            queue.waiting.clear()
        queue.waiting.append((subject, reply, headers, payload, origin, table))
        return
    _dispatch(host, subject, reply, headers, payload, origin, table)


def _dispatch(
    host: ApiHost,
    subject: str,
    reply: str | None,
    headers: bytes | None,
    payload: bytes,
    origin: ClientOrigin | None,
    table: RouteTable,
) -> bool:
    """Handle one request; True when it goes on in later turns (its last step
    then carries on with the requests waiting)."""
    tokens = api_tokens(subject, host.settings.domain)
    if tokens is None:
        return False
    found = table.resolve(tokens)
    if found is None:
        logger.debug("no JetStream API handler for %s", subject)
        return False
    route, params = found
    req = ApiRequest(subject, tokens, params, reply, headers, payload, origin)
    try:
        if required_level_refused(headers):
            raise ApiError(Err.REQUIRED_API_LEVEL)
        body = route.handler(host, req)
    except Exception as exc:
        _answer(host, route, req, _failure(route, req, exc), True)
        return False
    if isinstance(body, GeneratorType):  # a C type check (an ABC's is slow per request)
        host.api_queue.busy = True
        _step(host, route, req, body)
        return True
    _answer(host, route, req, cast(ApiBody, body), False)
    return False


def _failure(route: Route, req: ApiRequest, exc: Exception) -> dict[str, Any]:
    """The error envelope for what a handler raised."""
    if not isinstance(exc, ApiError):  # a server bug: logged in full, answered without paths or trace
        logger.exception("JetStream API %s failed", req.subject, exc_info=exc)
        exc = ApiError(Err.STREAM_GENERAL_ERROR, err=f"internal error: {type(exc).__name__}")
    return {"error": exc.to_json(), **route.error_fields}


def _step(host: ApiHost, route: Route, req: ApiRequest, steps: Steps[ApiBody]) -> None:
    """One turn's step of a request that works in turns; the next turn takes the
    next step, the last one answers and lets the waiting requests go on."""
    try:
        next(steps)
    except StopIteration as done:
        _answer(host, route, req, done.value, False)
    except Exception as exc:
        _answer(host, route, req, _failure(route, req, exc), True)
    else:
        host.clock.call_later(0, functools.partial(_step, host, route, req, steps))
        return
    _go_on(host)


def _go_on(host: ApiHost) -> None:
    """The request that held the others is done: the next waiting one runs on a
    later turn (one per turn: a backlog never holds the loop), or nobody waits."""
    queue = host.api_queue
    if queue.waiting:
        host.clock.call_later(0, functools.partial(_next_waiting, host))
    else:
        queue.busy = False


def _next_waiting(host: ApiHost) -> None:
    queue = host.api_queue
    if not queue.waiting:  # dropped at the queue's limit meanwhile
        queue.busy = False
        return
    subject, reply, headers, payload, origin, table = queue.waiting.popleft()
    if not _dispatch(host, subject, reply, headers, payload, origin, table):
        _go_on(host)


def _answer(host: ApiHost, route: Route, req: ApiRequest, body: ApiBody, failed: bool) -> None:
    """Count, answer and audit a handled request (nothing for a handler that
    answers by itself)."""
    if route.counted:
        host.api_stats.total += 1
        host.api_stats.errors += int(failed)
    if body is None:
        return
    subject, payload, origin = req.subject, req.payload, req.origin
    if isinstance(body, SplicedAnswer):  # a large answer, encoded over turns
        body.body = {"type": response_type(route.response), **body.body}
        body.start(host, req.reply, lambda text: audit(host, subject, payload, text, origin)
                   if route.counted else None)
        return
    response = {"type": response_type(route.response), **body}
    respond(host, req.reply, response)
    if route.counted:
        audit(host, subject, payload, response, origin)
