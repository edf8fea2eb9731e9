"""The broker's routing, sans-IO: one subject index for every message, client or internal.

`Broker` implements `jetstream_server.core.router.Router` for services and
routes what client sessions publish. Subscriptions of clients and internal
handlers (services such as JetStream) live in the same `SubjectIndex`; a
publish matches once (cached) and fans out. A client subscription delivers
through the `Subscriber` protocol, which the client session
(`jetstream_server.core.session.Session`) implements: this module never
knows sockets, the event loop or how bytes reach a client.

Invariants:
- a message goes to every matching plain subscription and to exactly one
  member of each matching queue group (chosen at random, as nats-server does);
- client subscriptions are served before internal handlers for the same
  message, so messages that a handler publishes re-entrantly reach client
  connections after the message that triggered them (publish order);
- `UNSUB <sid> <max>` removes a subscription once it has delivered `max`
  messages; a queue member that is done is not picked again;
- a client that connected with ``echo: false`` does not get its own messages;
- a request (reply set) from a client that asked for ``no_responders`` and
  has headers on, to a subject with no interest at all, is answered with a
  ``NATS/1.0 503`` status message on its reply subject;
- a run (`publish_run`) reaches its target as its messages would one by one
  with `publish_as`; when the target is one client subscription (no queue
  group, no other subscriber, no auto-unsubscribe count) the client gets the
  whole run in one call (`Subscriber.deliver_run`);
- a closing client's subscriptions stop receiving at once (`retire` marks
  them closed) and leave the index at most `RETIRE_STEP` per turn of the
  `schedule` the app gives (loop.call_soon), so closing a connection that
  holds 200,000 subscriptions never holds the loop; without a schedule (tests
  of the core) they leave at once.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Final, Protocol

from jetstream_server.core import protocol as P
from jetstream_server.core.router import ClientOrigin, MessageHandler, OutboundRun
from jetstream_server.core.subjects import SubjectIndex

log = logging.getLogger(__name__)

NO_RESPONDERS_HEADERS: Final = b"NATS/1.0 503\r\n\r\n"
RETIRE_STEP: Final = 2048  # retired subscriptions taken out of the index per turn (~5 ms)


class Subscriber(ClientOrigin, Protocol):
    """A client as the broker sees it: the options routing honours, and a
    place to deliver to. Implemented by the client session."""

    cid: int
    echo: bool
    headers: bool
    no_responders: bool

    def deliver(
        self,
        sub: Subscription,
        subject: bytes,
        reply: bytes | None,
        headers: bytes | None,
        payload: bytes,
    ) -> None:
        """Queue one message for the client (``MSG``/``HMSG`` for `sub`)."""
        ...

    def deliver_run(self, sub: Subscription, run: OutboundRun) -> None:
        """Queue every message of `run` for the client, in order, with one write."""
        ...

    def forget_sub(self, sub: Subscription) -> None:
        """`sub` was removed from the index (auto-unsubscribe, close)."""
        ...

    @property
    def backlog(self) -> int:
        """Bytes on their way to the client and not yet sent."""
        ...


class Subscription:
    """One subscription: a client's (client + sid) or an internal handler."""

    __slots__ = (
        "id",
        "subject",
        "queue",
        "sid",
        "sid_b",
        "client",
        "handler",
        "max_msgs",
        "delivered",
        "closed",
    )

    def __init__(
        self,
        sub_id: int,
        subject: str,
        queue: str | None,
        sid: str,
        client: Subscriber | None,
        handler: MessageHandler | None,
    ) -> None:
        self.id = sub_id
        self.subject = subject
        self.queue = queue
        self.sid = sid
        self.sid_b = sid.encode("utf-8", "surrogateescape")  # the bytes the client sent
        self.client = client
        self.handler = handler
        self.max_msgs: int | None = None
        self.delivered = 0
        self.closed = False

    def __repr__(self) -> str:
        owner = f"cid={self.client.cid}" if self.client is not None else "internal"
        return f"Subscription({self.subject!r}, queue={self.queue!r}, sid={self.sid}, {owner})"


class MessageList:
    """An `OutboundRun` of messages added one by one (each with its own
    subject, reply, headers and payload; payloads may be memoryviews)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[str, str | None, bytes | None, bytes | memoryview]] = []

    def add(
        self, subject: str, reply: str | None, headers: bytes | None, payload: bytes | memoryview
    ) -> None:
        self.items.append((subject, reply, headers, payload))

    def __len__(self) -> int:
        return len(self.items)

    def encode(self, sid: bytes, headers: bool) -> tuple[bytes, int]:
        out: list[bytes] = []
        carried = 0
        last_subject: str | None = None
        subject_b = b""
        for subject, reply, hdr, payload in self.items:
            if subject is not last_subject:
                subject_b = subject.encode("utf-8", "surrogateescape")
                last_subject = subject
            reply_b = reply.encode("utf-8", "surrogateescape") if reply else None
            if hdr is not None and headers:
                out.append(P.encode_hmsg(subject_b, sid, reply_b, hdr, payload))
                carried += len(hdr) + len(payload)
            else:
                out.append(P.encode_msg(subject_b, sid, reply_b, payload))
                carried += len(payload)
        return b"".join(out), carried

    def messages(self) -> Iterator[tuple[str, str | None, bytes | None, bytes]]:
        for subject, reply, hdr, payload in self.items:
            yield subject, reply, hdr, payload if type(payload) is bytes else bytes(payload)


class Broker:
    """Routes messages between client sessions and internal services."""

    def __init__(self) -> None:
        self.index: SubjectIndex[Subscription] = SubjectIndex()
        self._internal: dict[int, Subscription] = {}
        self._next_id = 1
        self._choice: Callable[[list[Subscription]], Subscription] = random.choice
        # the client whose message an internal handler is running for (None:
        # internal); read at the handler's start (the API audit's `client`)
        self.origin: Subscriber | None = None
        # runs a callback on a later loop turn (the app sets loop.call_soon)
        self.schedule: Callable[[Callable[[], None]], object] | None = None
        self._retiring: deque[Subscription] = deque()
        self._drain_scheduled = False

    # -- Router ----------------------------------------------------------------
    def publish(
        self, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        self.route(subject, reply, headers, payload, None)

    def publish_as(
        self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        """Route by `target` but present the message as `subject` (JetStream
        deliveries keep their stream subject while going to an inbox)."""
        self.route(target, reply, headers, payload, None, msg_subject=subject)

    def publish_run(self, target: str, run: OutboundRun) -> None:
        result = self.index.match(target)
        plain = result.plain
        if len(plain) == 1 and not result.queues:
            sub = plain[0]
            client = sub.client
            if client is not None and sub.max_msgs is None:
                if not sub.closed:
                    client.deliver_run(sub, run)
                return
        route = self.route
        for subject, reply, headers, payload in run.messages():
            route(target, reply, headers, payload, None, msg_subject=subject)

    def subscribe(self, subject: str, handler: MessageHandler, queue: str | None = None) -> int:
        sub = self._new_sub(subject, queue, "", None, handler)
        self._internal[sub.id] = sub
        self.index.insert(subject, sub, queue)
        return sub.id

    def unsubscribe(self, sub_id: int) -> None:
        sub = self._internal.pop(sub_id, None)
        if sub is not None:
            self.remove(sub)

    def has_interest(self, subject: str) -> bool:
        return bool(self.index.match(subject))

    def backlog(self, subject: str) -> int:
        """The largest backlog of the clients a message to `subject` would reach
        (0 for internal handlers): a service producing a long reply waits while
        it is high rather than make its reader a slow consumer."""
        result = self.index.match(subject)
        subs = list(result.plain)
        for members in result.queues.values():
            subs.extend(members)
        return max((s.client.backlog for s in subs if s.client is not None), default=0)

    # -- client subscriptions ----------------------------------------------------
    def _new_sub(
        self,
        subject: str,
        queue: str | None,
        sid: str,
        client: Subscriber | None,
        handler: MessageHandler | None,
    ) -> Subscription:
        sub = Subscription(self._next_id, subject, queue, sid, client, handler)
        self._next_id += 1
        return sub

    def add_client_sub(
        self, client: Subscriber, subject: str, queue: str | None, sid: str
    ) -> Subscription:
        sub = self._new_sub(subject, queue, sid, client, None)
        self.index.insert(subject, sub, queue)
        return sub

    def remove(self, sub: Subscription) -> None:
        if sub.closed:
            return
        sub.closed = True
        self.index.remove(sub.subject, sub, sub.queue)
        if sub.client is not None:
            sub.client.forget_sub(sub)
        else:
            self._internal.pop(sub.id, None)

    def retire(self, subs: Iterable[Subscription]) -> None:
        """The subscriptions of a closing client: closed now (nothing more is
        delivered to them), out of the index over the next turns."""
        retiring = self._retiring
        for sub in subs:
            if not sub.closed:
                sub.closed = True
                retiring.append(sub)
        if self.schedule is None:
            self.drain_retired(len(retiring))
        elif retiring and not self._drain_scheduled:
            self._drain_scheduled = True
            self.schedule(self._drain_turn)

    def drain_retired(self, limit: int) -> int:
        """Take at most `limit` retired subscriptions out of the index; how many."""
        retiring = self._retiring
        remove = self.index.remove
        done = 0
        while retiring and done < limit:
            sub = retiring.popleft()
            remove(sub.subject, sub, sub.queue)
            done += 1
        return done

    def _drain_turn(self) -> None:
        self._drain_scheduled = False
        self.drain_retired(RETIRE_STEP)
        if self._retiring and self.schedule is not None:
            self._drain_scheduled = True
            self.schedule(self._drain_turn)

    @property
    def num_subscriptions(self) -> int:
        return len(self.index) - len(self._retiring)

    # -- routing -----------------------------------------------------------------
    def route(
        self,
        subject: str,
        reply: str | None,
        headers: bytes | None,
        payload: bytes,
        origin: Subscriber | None,
        msg_subject: str | None = None,
    ) -> int:
        """Deliver one message; returns how many subscriptions got it.

        `msg_subject`, when given, is the subject subscribers see (routing is by
        `subject`): JetStream deliveries keep their stream subject (publish_as)."""
        result = self.index.match(subject)
        plain = result.plain
        queues = result.queues
        if not plain and not queues:
            if reply and origin is not None and origin.no_responders and origin.headers:
                self._no_responders(reply, origin)
            return 0
        if msg_subject is not None:
            subject = msg_subject
        if len(plain) == 1 and not queues:
            # the common cases: one internal subscriber (a stream, the API) or
            # one client (an inbox, a deliver subject), nothing to sort out
            sub = plain[0]
            if sub.closed:
                return 0
            client = sub.client
            if client is None:
                handler = sub.handler
                assert handler is not None
                self.origin = origin
                try:
                    handler(subject, reply, headers, payload)
                except Exception:  # a faulty service must not take the broker down
                    log.exception("internal handler for %r failed on %r", sub.subject, subject)
                return 1
            if client is origin and not client.echo:
                return 0
            client.deliver(
                sub,
                subject.encode("utf-8", "surrogateescape"),
                reply.encode("utf-8", "surrogateescape") if reply else None,
                headers,
                payload,
            )
            if sub.max_msgs is not None:
                sub.delivered += 1
                if sub.delivered >= sub.max_msgs:
                    self.remove(sub)
            return 1
        subject_b = subject.encode("utf-8", "surrogateescape")
        reply_b = reply.encode("utf-8", "surrogateescape") if reply else None
        internal: list[Subscription] | None = None
        delivered = 0
        no_echo_from = origin if origin is not None and not origin.echo else None
        for sub in plain:
            client = sub.client
            if client is None:
                if internal is None:
                    internal = [sub]
                else:
                    internal.append(sub)
                continue
            if client is no_echo_from or sub.closed:
                continue
            client.deliver(sub, subject_b, reply_b, headers, payload)
            delivered += 1
            if sub.max_msgs is not None:
                sub.delivered += 1
                if sub.delivered >= sub.max_msgs:
                    self.remove(sub)
        if queues:
            for members in queues.values():
                candidates = [
                    m
                    for m in members
                    if not m.closed and (m.client is None or m.client is not no_echo_from)
                ]
                if not candidates:
                    continue
                sub = candidates[0] if len(candidates) == 1 else self._choice(candidates)
                if sub.client is None:
                    if internal is None:
                        internal = [sub]
                    else:
                        internal.append(sub)
                    continue
                sub.client.deliver(sub, subject_b, reply_b, headers, payload)
                delivered += 1
                if sub.max_msgs is not None:
                    sub.delivered += 1
                    if sub.delivered >= sub.max_msgs:
                        self.remove(sub)
        if internal is not None:
            for sub in internal:
                if sub.closed:
                    continue
                handler = sub.handler
                assert handler is not None
                delivered += 1
                self.origin = origin
                try:
                    handler(subject, reply, headers, payload)
                except Exception:  # a faulty service must not take the broker down
                    log.exception("internal handler for %r failed on %r", sub.subject, subject)
        return delivered

    def _no_responders(self, reply: str, origin: Subscriber) -> None:
        reply_b = reply.encode("utf-8", "surrogateescape")
        for sub in self.index.match(reply).plain:
            if sub.client is origin and not sub.closed:
                origin.deliver(sub, reply_b, None, NO_RESPONDERS_HEADERS, b"")
                return
