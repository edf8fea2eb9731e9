"""An in-memory `Router` for unit tests of services (JetStream engine, consumers).

Synchronous and deterministic: `publish()` calls every matching internal
handler at once and appends to every matching client `Inbox`. Re-entrant
publishes from inside a handler are queued and delivered after the current
one, so messages reach subscribers in the order they were published (the
broker's invariant in jetstream_server/core/routing.py). `publish_as` routes by its target and
presents the message under its own subject, as the broker does for JetStream
deliveries (`publish_run`: each message of the run so, read back from
its frames by `run_frames.decoded`); `origin` is always
None (every publish here is internal).

Usage::

    router = RouterDouble()
    engine = JetStream(settings, FakeClock()); engine.start(router)
    inbox = router.inbox("_INBOX.1")
    router.publish("$JS.API.INFO", "_INBOX.1", None, b"")
    inbox.json()  # the last answer, decoded
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from run_frames import decoded

from jetstream_server.core.headers import Headers, parse_headers
from jetstream_server.core.router import MessageHandler, OutboundRun
from jetstream_server.core.subjects import filter_matches


@dataclass
class Msg:
    subject: str
    reply: str | None
    headers: bytes | None
    payload: bytes

    @property
    def hdr(self) -> Headers | None:
        return parse_headers(self.headers) if self.headers else None

    def json(self) -> Any:
        return json.loads(self.payload)


@dataclass
class Inbox:
    subject: str
    messages: list[Msg] = field(default_factory=list)

    def json(self, index: int = -1) -> Any:
        return self.messages[index].json()

    def take(self) -> list[Msg]:
        out, self.messages = self.messages, []
        return out


class RouterDouble:
    origin = None

    def __init__(self) -> None:
        self._subs: dict[int, tuple[str, MessageHandler, str | None]] = {}
        self._next = 1
        # (routed by, presented as, reply, headers, payload)
        self._queue: deque[tuple[str, str, str | None, bytes | None, bytes]] = deque()
        self._delivering = False
        self.published: list[Msg] = []

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.publish_as(subject, subject, reply, headers, payload)

    def publish_as(
        self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        self._queue.append((target, subject, reply, headers, payload))
        if self._delivering:
            return
        self._delivering = True
        try:
            while self._queue:
                route, subj, rep, hdr, data = self._queue.popleft()
                self.published.append(Msg(subj, rep, hdr, data))
                groups_done: set[str] = set()
                for pattern, handler, queue in list(self._subs.values()):
                    if not filter_matches(pattern, route):
                        continue
                    if queue is not None:
                        if queue in groups_done:
                            continue
                        groups_done.add(queue)
                    handler(subj, rep, hdr, data)
        finally:
            self._delivering = False

    def publish_run(self, target: str, run: OutboundRun) -> None:
        for subject, reply, headers, payload in decoded(run):
            self.publish_as(target, subject, reply, headers, payload)

    def subscribe(self, subject: str, handler: MessageHandler, queue: str | None = None) -> int:
        sid = self._next
        self._next += 1
        self._subs[sid] = (subject, handler, queue)
        return sid

    def unsubscribe(self, sub_id: int) -> None:
        self._subs.pop(sub_id, None)

    def has_interest(self, subject: str) -> bool:
        return any(filter_matches(p, subject) for p, _, _ in self._subs.values())

    def backlog(self, subject: str) -> int:
        return 0  # every delivery here is synchronous: nothing is ever waiting to be sent

    @property
    def subscription_count(self) -> int:
        return len(self._subs)

    # -- client side helpers -------------------------------------------------------
    def inbox(self, subject: str) -> Inbox:
        box = Inbox(subject)

        def collect(subj: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
            box.messages.append(Msg(subj, reply, headers, payload))

        self.subscribe(subject, collect)
        return box

    def request(self, subject: str, body: Any = b"", headers: bytes | None = None) -> list[Msg]:
        """Publish with a fresh reply inbox; return everything answered to it."""
        reply = f"_INBOX.{self._next}"
        box = self.inbox(reply)
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.publish(subject, reply, headers, payload)
        return box.messages

    def request_json(self, subject: str, body: Any = b"", headers: bytes | None = None) -> Any:
        answers = self.request(subject, body, headers)
        assert answers, f"no answer to {subject}"
        return answers[-1].json()
