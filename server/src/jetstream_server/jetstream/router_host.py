"""The router as consumers see it (`RouterHost`), and the router before there is one (`NO_ROUTER`).

`RouterHost` is the `ConsumerHost` (consumer/delivery.py) an engine gives its
consumers, snapshots and restores: the router's bound methods taken once, so
a delivery costs no call of ours, and `deliver` is the router's `publish_as`
(a delivery routes by the inbox or deliver subject while presenting the
message's stream subject, as nats-server does), `deliver_run` its
`publish_run` (a run of deliveries, one write to a single client). It names the account and
domain in the advisories consumers send.

`NO_ROUTER` stands in until an engine is started: publishing goes nowhere,
loudly; subscribing is an error.
"""

from __future__ import annotations

import logging

from jetstream_server.core.clock import Clock
from jetstream_server.core.router import ClientOrigin, MessageHandler, OutboundRun, Router
from jetstream_server.jetstream.persistence import ACCOUNT

logger = logging.getLogger(__name__)


class RouterHost:
    """`ConsumerHost` over the router (see module docstring)."""

    def __init__(
        self, router: Router, clock: Clock, account: str = ACCOUNT, domain: str = ""
    ) -> None:
        self.clock = clock
        self.router = router
        self.account = account
        self.domain = domain
        self.publish = router.publish
        self.deliver = router.publish_as
        self.deliver_run = router.publish_run
        self.has_interest = router.has_interest
        self.unsubscribe = router.unsubscribe

    def subscribe(self, subject: str, handler: MessageHandler) -> int:
        return self.router.subscribe(subject, handler)


class _NoRouter:
    """A `Router` before `start()`: publishing goes nowhere, loudly."""

    origin: ClientOrigin | None = None

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        logger.warning("JetStream not started: dropping message to %s", subject)

    def publish_as(
        self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        self.publish(target, reply, headers, payload)

    def publish_run(self, target: str, run: OutboundRun) -> None:
        logger.warning("JetStream not started: dropping %d messages to %s", len(run), target)

    def subscribe(self, subject: str, handler: MessageHandler, queue: str | None = None) -> int:
        raise RuntimeError("JetStream not started")

    def unsubscribe(self, sub_id: int) -> None:
        return None

    def has_interest(self, subject: str) -> bool:
        return False

    def backlog(self, subject: str) -> int:
        return 0


NO_ROUTER: Router = _NoRouter()
