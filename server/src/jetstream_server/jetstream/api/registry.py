"""Routing of `$JS.API.<...>` requests to handler functions.

Handlers register with `@api_handler("STREAM.CREATE.*", "stream_create")`: the
pattern is matched token by token against the subject after `$JS.API.`
(`*` = exactly one token, captured into `ApiRequest.params`; a trailing `>`
= one or more tokens, captured as one dotted string). The second argument is
the response type name; the dispatcher adds
`"type": "io.nats.jetstream.api.v1.<name>"` to every JSON response.

A handler returns the response body (a dict, without "type"), or None when it
answers by itself later (e.g. CONSUMER.MSG.NEXT delivers messages and statuses
instead of a JSON reply). Raising `ApiError` produces the error envelope.
More specific patterns (more literal tokens) win over less specific ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jetstream_server.jetstream.engine import JetStream

TYPE_PREFIX = "io.nats.jetstream.api.v1."


@dataclass(frozen=True, slots=True)
class ApiRequest:
    subject: str  # the full subject, e.g. "$JS.API.STREAM.INFO.ORDERS"
    tokens: tuple[str, ...]  # tokens after the API prefix: ("STREAM", "INFO", "ORDERS")
    params: tuple[str, ...]  # what the pattern's wildcards captured: ("ORDERS",)
    reply: str | None
    headers: bytes | None
    payload: bytes


ApiHandler = Callable[["JetStream", ApiRequest], "dict[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class Route:
    pattern: tuple[str, ...]
    response_type: str
    handler: ApiHandler

    @property
    def specificity(self) -> tuple[int, int]:
        literals = sum(1 for t in self.pattern if t not in ("*", ">"))
        return (literals, len(self.pattern))

    def match(self, tokens: tuple[str, ...]) -> tuple[str, ...] | None:
        params: list[str] = []
        for i, want in enumerate(self.pattern):
            if want == ">":
                if i >= len(tokens):
                    return None
                params.append(".".join(tokens[i:]))
                return tuple(params)
            if i >= len(tokens):
                return None
            if want == "*":
                params.append(tokens[i])
            elif want != tokens[i]:
                return None
        return tuple(params) if len(tokens) == len(self.pattern) else None


ROUTES: list[Route] = []


def api_handler(pattern: str, response_type: str) -> Callable[[ApiHandler], ApiHandler]:
    def register(func: ApiHandler) -> ApiHandler:
        ROUTES.append(Route(tuple(pattern.split(".")), response_type, func))
        ROUTES.sort(key=lambda r: r.specificity, reverse=True)
        return func

    return register


def resolve(tokens: tuple[str, ...]) -> tuple[Route, tuple[str, ...]] | None:
    """The most specific route matching `tokens`, with its captured params."""
    for route in ROUTES:
        params = route.match(tokens)
        if params is not None:
            return route, params
    return None
