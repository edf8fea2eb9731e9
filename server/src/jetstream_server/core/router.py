"""The seam between the core NATS broker and the services built on it.

The broker (`jetstream_server.core.routing`) routes every published message through one
subject index. JetStream is a *service*: it subscribes internally (API
subjects, stream subjects, ack subjects) and publishes like any client. The
service never touches sockets or asyncio; the broker never knows JetStream.

Invariants:
- A handler is called synchronously, on the event-loop thread, for every
  message whose subject matches its subscription (queue subscriptions: one
  member of the group per message, as for clients).
- `publish()` from inside a handler is allowed (re-entrant); messages reach
  client connections in the order they were published.
- An internal subscription counts as interest: a request to a subject only a
  service serves does not get a no-responders status.
- `headers` is the raw NATS header block or None; `payload` is bytes.
- `publish_as` routes by one subject while presenting another (a JetStream
  delivery goes to an inbox and keeps its stream subject).
- `origin` is the client whose message the running handler was called for
  (None for internal publishes); read it at the handler's start, before the
  handler publishes anything itself.
- `publish_run` routes many messages by one subject as `publish_as` would,
  one by one, except that a run whose target is a single client subscription
  reaches it whole: its frames are encoded by the run (`OutboundRun.encode`)
  and queued with one call, the client's checks done once for the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

# (subject, reply, headers, payload)
MessageHandler = Callable[[str, "str | None", "bytes | None", bytes], None]


class OutboundRun(Protocol):
    """Messages a service sends to one target as a run (`Router.publish_run`):
    a pull's batch, a push consumer's backlog, a batched direct get. The run
    encodes its own frames, so the router's work is once per run."""

    def __len__(self) -> int: ...

    def encode(self, sid: bytes, headers: bool) -> tuple[bytes, int]:
        """The ``MSG``/``HMSG`` frames of every message, in order, for subscription
        `sid` (``HMSG`` only when the client takes `headers`; otherwise a message's
        headers are left out, as `deliver` does), and the header and payload bytes
        they carry (what the client's `out_bytes` counts)."""
        ...

    def messages(self) -> Iterator[tuple[str, str | None, bytes | None, bytes]]:
        """Each message as (subject, reply, headers, payload), for targets that take
        them one by one (several subscribers, a queue group, an internal handler,
        a client whose permissions are checked per message)."""
        ...


class ClientOrigin(Protocol):
    """A client connection as a service may describe it (the `client` of the
    API audit advisory); the client session implements it."""

    @property
    def cid(self) -> int: ...

    @property
    def ip(self) -> str: ...

    @property
    def user(self) -> str | None: ...

    @property
    def name(self) -> str: ...

    @property
    def lang(self) -> str: ...

    @property
    def version(self) -> str: ...


class Router(Protocol):
    @property
    def origin(self) -> ClientOrigin | None:
        """The client whose message the running handler was called for (None: internal)."""
        ...

    def publish(
        self, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        """Deliver a message to every matching subscription (client or internal)."""
        ...

    def publish_as(
        self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        """Route by `target` but present the message as `subject`."""
        ...

    def publish_run(self, target: str, run: OutboundRun) -> None:
        """Route every message of `run` by `target` (each presented as its own
        subject), as `publish_as` would one by one; a single client subscription
        gets the whole run with one write."""
        ...

    def subscribe(self, subject: str, handler: MessageHandler, queue: str | None = None) -> int:
        """Add an internal subscription; returns its id for `unsubscribe`."""
        ...

    def unsubscribe(self, sub_id: int) -> None: ...

    def has_interest(self, subject: str) -> bool:
        """True when at least one subscription (client or internal) matches."""
        ...

    def backlog(self, subject: str) -> int:
        """Bytes not yet sent to the clients a message to `subject` would reach (the
        largest; 0 for none or internal handlers): a long reply waits while it is high
        rather than make its reader a slow consumer."""
        ...


class Service(Protocol):
    """Something that lives inside the server and talks through a `Router`."""

    def start(self, router: Router) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class JszReporter(Protocol):
    """A service with a part of the monitoring summary ``/jsz`` (JetStream's
    engines: one part per account, summed by the server)."""

    def jsz(self) -> dict[str, Any]: ...


@runtime_checkable
class ShutdownNotice(Protocol):
    """A service that tells its clients the server is going away: the server
    calls `shutting_down()` before it closes the client connections (what it
    publishes then is written before they close), `close()` after."""

    def shutting_down(self) -> None: ...
