"""`$JS.API` in an account without JetStream: every request answered with 10039.

nats-server answers the API requests of an account that has no JetStream
(an account of the ``accounts`` block without ``jetstream``, the system
account) with ``{"code":503,"err_code":10039,"description":"JetStream not
enabled for account"}`` in the response type of the request. `NoJetStream`
is the `Service` that does so on that account's broker: it resolves the
request in the route table only for its response type, and never runs a
handler. It subscribes to each route's pattern except direct gets and
``CONSUMER.MSG.NEXT``, which nats-server leaves without interest there (the
client gets "no responders"); each request is answered once, by the
subscription of the route it resolves to.

The system account (`system=True`) is answered as nats-server's apiDispatch
answers it: ``$JS.API.INFO`` with the account info type, every other
``$JS.API.`` subject (but ``$JS.API.ACCOUNT.``) with ``"type":
"io.nats.jetstream.api.v1.system_response"`` and the same error, no other
fields.
"""

from __future__ import annotations

import functools
import json

from jetstream_server.core.router import Router
from jetstream_server.jetstream.api.dispatch import API_PREFIX, api_tokens, response_type
from jetstream_server.jetstream.api.routes import ROUTE_TABLE, Route
from jetstream_server.jetstream.errors import ApiError, Err

_SILENT = ("DIRECT.", "CONSUMER.MSG.NEXT.")
_ACCOUNT_PREFIX = API_PREFIX + "ACCOUNT."
_NOT_ENABLED = ApiError(Err.NOT_ENABLED_FOR_ACCOUNT).to_json()


class NoJetStream:
    """The `$JS.API.>` responder of an account without JetStream."""

    def __init__(self, system: bool = False) -> None:
        self._router: Router | None = None
        self._subs: list[int] = []
        self._system = system

    def start(self, router: Router) -> None:
        self._router = router
        if self._system:
            handler = functools.partial(self._on_system_request, router)
            self._subs.append(router.subscribe(API_PREFIX + ">", handler))
            return
        for route in ROUTE_TABLE.routes:
            if route.pattern.startswith(_SILENT):
                continue
            handler = functools.partial(self._on_request, router, route)
            self._subs.append(router.subscribe(API_PREFIX + route.pattern, handler))

    def close(self) -> None:
        if self._router is not None:
            for sub in self._subs:
                self._router.unsubscribe(sub)
        self._subs.clear()

    @staticmethod
    def _on_system_request(
        router: Router, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        if not reply or subject.startswith(_ACCOUNT_PREFIX):
            return
        kind = "account_info" if subject == API_PREFIX + "INFO" else "system"
        body = {"type": response_type(kind), "error": _NOT_ENABLED}
        router.publish(reply, None, None, json.dumps(body, separators=(",", ":")).encode())

    @staticmethod
    def _on_request(
        router: Router,
        route: Route,
        subject: str,
        reply: str | None,
        headers: bytes | None,
        payload: bytes,
    ) -> None:
        tokens = api_tokens(subject)
        if tokens is None or not reply:
            return
        found = ROUTE_TABLE.resolve(tokens)
        if found is None or found[0] is not route:
            return
        body = {
            "type": response_type(route.response),
            "error": _NOT_ENABLED,
            **route.error_fields,
        }
        router.publish(reply, None, None, json.dumps(body, separators=(",", ":")).encode())
