"""How the API answers: the JSON reply, and the audit advisory of an answered request.

`respond` publishes a response body as compact JSON to the request's reply
subject (nothing without one); a large answer goes out over turns instead
(api/spliced.py). `audit` sends nats-server's
``$JS.EVENT.ADVISORY.API`` for a counted request, only when someone listens,
with the requesting client as the session told it (`ClientOrigin`: the
router's `origin` when the request came in; None for an internal request).
"""

from __future__ import annotations

from typing import Any

from jetstream_server.core.router import ClientOrigin
from jetstream_server.jetstream import advisories
from jetstream_server.jetstream.api.host import ApiHost
from jetstream_server.jetstream.api.spliced import encode


def respond(host: ApiHost, reply: str | None, body: dict[str, Any]) -> None:
    """Publish `body` as JSON to `reply` (nothing when there is no reply)."""
    if reply:
        host.router.publish(reply, None, None, encode(body).encode())


def audit(
    host: ApiHost, subject: str, request: bytes, response: dict[str, Any] | str,
    origin: ClientOrigin | None,
) -> None:
    """The API audit advisory for an answered request (only when someone listens)."""
    router = host.router
    if not router.has_interest(advisories.API_AUDIT):
        return
    settings = host.settings
    advisories.api_audit(
        router, host.clock.now_ns(), settings.server_name,
        client_info(origin, host.consumer_host.account, settings.server_name),
        subject, request, response, settings.domain or None,
    )


def client_info(
    origin: ClientOrigin | None, account: str, server_name: str
) -> dict[str, Any] | None:
    """nats-server's ClientInfo of a client connection, as far as the session knows it."""
    if origin is None:
        return None
    info: dict[str, Any] = {
        "host": origin.ip or None,
        "id": origin.cid,
        "acc": account,
        "user": origin.user,
        "name": origin.name or None,
        "lang": origin.lang or None,
        "ver": origin.version or None,
        "server": server_name or None,
        "kind": "Client",
        "client_type": "nats",
    }
    return {k: v for k, v in info.items() if v is not None}
