"""The pinned client advisories of priority groups (nats-server 2.11, ADR-42).

``$JS.EVENT.ADVISORY.CONSUMER.PINNED.<stream>.<consumer>`` when a pull request
of a `pinned_client` consumer gets a new pin id (type
``io.nats.jetstream.advisory.v1.consumer_group_pinned``, with `group` and
`pinned_id`), ``$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.<stream>.<consumer>``
when the pin is lost (``...consumer_group_unpinned``, `reason` ``timeout``
after `priority_timeout`, ``admin`` for `$JS.API.CONSUMER.UNPIN`, sent even
when nothing was pinned, as nats-server does). Like nats-server, nothing is
encoded or sent while nobody listens on the subject. The account and domain
come from the consumer host when it has them (`account`, `domain`).
"""

from __future__ import annotations

import json
from typing import Any, Final

from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.consumer.priority import new_pin_id
from jetstream_server.jetstream.timefmt import rfc3339_ns

PINNED_PREFIX: Final = "$JS.EVENT.ADVISORY.CONSUMER.PINNED"
UNPINNED_PREFIX: Final = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED"
PINNED_TYPE: Final = "io.nats.jetstream.advisory.v1.consumer_group_pinned"
UNPINNED_TYPE: Final = "io.nats.jetstream.advisory.v1.consumer_group_unpinned"


class PinAdvisories:
    """Sends the two advisories of one consumer."""

    def __init__(self, host: ConsumerHost, stream: str, consumer: str) -> None:
        self.host = host
        self.stream = stream
        self.consumer = consumer

    def pinned(self, group: str, pin_id: str) -> None:
        self._send(PINNED_PREFIX, PINNED_TYPE, {"group": group, "pinned_id": pin_id})

    def unpinned(self, group: str, reason: str) -> None:
        self._send(UNPINNED_PREFIX, UNPINNED_TYPE, {"group": group, "reason": reason})

    def _send(self, prefix: str, kind: str, fields: dict[str, Any]) -> None:
        subject = f"{prefix}.{self.stream}.{self.consumer}"
        if not self.host.has_interest(subject):
            return
        event: dict[str, Any] = {
            "type": kind,
            "id": new_pin_id(),
            "timestamp": rfc3339_ns(self.host.clock.now_ns()),
            "account": getattr(self.host, "account", "$G"),
            "stream": self.stream,
            "consumer": self.consumer,
        }
        domain = getattr(self.host, "domain", "")
        if domain:
            event["domain"] = domain
        event.update(fields)
        self.host.publish(subject, None, None, json.dumps(event, separators=(",", ":")).encode())
