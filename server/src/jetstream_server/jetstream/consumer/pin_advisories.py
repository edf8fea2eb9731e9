"""The pinned client advisories of priority groups (nats-server 2.11, ADR-42).

``$JS.EVENT.ADVISORY.CONSUMER.PINNED.<stream>.<consumer>`` when a pull request
of a `pinned_client` consumer gets a new pin id (type
``io.nats.jetstream.advisory.v1.consumer_group_pinned``, with `group` and
`pinned_id`), ``$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.<stream>.<consumer>``
when the pin is lost (``...consumer_group_unpinned``, `reason` ``timeout``
after `priority_timeout`, ``admin`` for `$JS.API.CONSUMER.UNPIN`, sent even
when nothing was pinned, as nats-server does). The events are built by the
shared advisories module (nothing is encoded or sent while nobody listens);
this binds them to one consumer, with the account and domain of its host.
"""

from __future__ import annotations

from jetstream_server.jetstream import advisories
from jetstream_server.jetstream.consumer.delivery import ConsumerHost


class PinAdvisories:
    """Sends the two advisories of one consumer."""

    def __init__(self, host: ConsumerHost, stream: str, consumer: str) -> None:
        self.host = host
        self.stream = stream
        self.consumer = consumer

    def pinned(self, group: str, pin_id: str) -> None:
        advisories.consumer_pinned(self.host, self.host.clock.now_ns(), self._account(),
                                   self.stream, self.consumer, group, pin_id, self._domain())

    def unpinned(self, group: str, reason: str) -> None:
        advisories.consumer_unpinned(self.host, self.host.clock.now_ns(), self._account(),
                                     self.stream, self.consumer, group, reason, self._domain())

    def _account(self) -> str:
        return self.host.account or "$G"

    def _domain(self) -> str | None:
        return self.host.domain or None
