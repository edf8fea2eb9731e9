"""JetStream advisories: the `$JS.EVENT.ADVISORY.>` events nats-server publishes.

Subjects and JSON shapes are nats-server's (server/jetstream_events.go), each
``{"type": "io.nats.jetstream.advisory.v1.<kind>", "id", "timestamp", ...}``:
- ``STREAM.CREATED|UPDATED|DELETED.<stream>``: ``stream_action`` with
  ``stream`` and ``action`` (``create`` / ``modify`` / ``delete``);
- ``CONSUMER.CREATED|DELETED.<stream>.<consumer>``: ``consumer_action`` with
  ``stream``, ``consumer``, ``action``;
- ``CONSUMER.MSG_NAKED.<stream>.<consumer>`` (``nak``) and
  ``CONSUMER.MSG_TERMINATED...`` (``terminated``, with the ``+TERM`` reason):
  ``consumer_seq``, ``stream_seq``, ``deliveries``;
- ``CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`` (``max_deliver``):
  ``stream_seq``, ``deliveries``;
- ``CONSUMER.PAUSE.<stream>.<consumer>`` (``consumer_pause``): ``paused`` and
  ``pause_until`` (Go's zero time when unset), when the pause changes or ends;
- ``CONSUMER.PINNED|UNPINNED.<stream>.<consumer>`` (``consumer_group_pinned``
  with ``group`` and ``pinned_id``; ``consumer_group_unpinned`` with
  ``group`` and ``reason``, ``admin`` or ``timeout``), with ``account``;
- ``API`` (``api_audit``): every counted `$JS.API` request with ``server``,
  ``client`` (what the requesting connection told: ``id``, ``host``, ``acc``,
  ``user``, ``name``, ``lang``, ``ver``, ``kind``, ``client_type``),
  ``subject``, ``request`` (left out when empty) and ``response`` (the JSON
  answered); ``domain`` when JetStream has one.

Cost bounded as in nats-server: nothing is built unless a subscription
matches the subject (`Publisher.has_interest`). Sans-IO: a `Publisher`
(the router, or a consumer's host) and a clock time.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final, Protocol

from jetstream_server.core.gotime import rfc3339_ns

PREFIX: Final = "$JS.EVENT.ADVISORY."
API_AUDIT: Final = PREFIX + "API"
TYPE_PREFIX: Final = "io.nats.jetstream.advisory.v1."
_NULLABLE: Final = frozenset({"client"})  # Go's pointer without omitempty: null
_ALPHABET: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Publisher(Protocol):
    def publish(
        self, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None: ...

    def has_interest(self, subject: str) -> bool: ...


def event_id() -> str:
    """A unique 22-character base62 id, as nats-server's NUIDs look."""
    value = int.from_bytes(os.urandom(17), "big")
    chars = []
    for _ in range(22):
        value, digit = divmod(value, 62)
        chars.append(_ALPHABET[digit])
    return "".join(chars)


def send(out: Publisher, subject: str, kind: str, now_ns: int, fields: dict[str, Any]) -> bool:
    """Publish one advisory when someone listens; True when it was sent."""
    if not out.has_interest(subject):
        return False
    body = {"type": TYPE_PREFIX + kind, "id": event_id(), "timestamp": rfc3339_ns(now_ns),
            **{k: v for k, v in fields.items() if v is not None or k in _NULLABLE}}
    out.publish(subject, None, None, json.dumps(body, separators=(",", ":")).encode())
    return True


_STREAM_SUBJECTS: Final = {"create": "CREATED", "modify": "UPDATED", "delete": "DELETED"}


def stream_action(out: Publisher, now_ns: int, stream: str, action: str,
                  domain: str | None = None) -> bool:
    """A stream was created, updated (``modify``) or deleted."""
    return send(out, f"{PREFIX}STREAM.{_STREAM_SUBJECTS[action]}.{stream}", "stream_action",
                now_ns, {"stream": stream, "action": action, "domain": domain or None})


def consumer_action(out: Publisher, now_ns: int, stream: str, consumer: str, action: str,
                    domain: str | None = None) -> bool:
    """A consumer was created or deleted."""
    verb = "CREATED" if action == "create" else "DELETED"
    return send(out, f"{PREFIX}CONSUMER.{verb}.{stream}.{consumer}", "consumer_action", now_ns,
                {"stream": stream, "consumer": consumer, "action": action,
                 "domain": domain or None})


def nak(out: Publisher, now_ns: int, stream: str, consumer: str, consumer_seq: int,
        stream_seq: int, deliveries: int) -> bool:
    return send(out, f"{PREFIX}CONSUMER.MSG_NAKED.{stream}.{consumer}", "nak", now_ns,
                {"stream": stream, "consumer": consumer, "consumer_seq": consumer_seq,
                 "stream_seq": stream_seq, "deliveries": deliveries})


def terminated(out: Publisher, now_ns: int, stream: str, consumer: str, consumer_seq: int,
               stream_seq: int, deliveries: int, reason: str = "") -> bool:
    return send(out, f"{PREFIX}CONSUMER.MSG_TERMINATED.{stream}.{consumer}", "terminated",
                now_ns, {"stream": stream, "consumer": consumer, "consumer_seq": consumer_seq,
                         "stream_seq": stream_seq, "deliveries": deliveries,
                         "reason": reason or None})


def max_deliveries(out: Publisher, now_ns: int, stream: str, consumer: str, stream_seq: int,
                   deliveries: int) -> bool:
    return send(out, f"{PREFIX}CONSUMER.MAX_DELIVERIES.{stream}.{consumer}", "max_deliver",
                now_ns, {"stream": stream, "consumer": consumer, "stream_seq": stream_seq,
                         "deliveries": deliveries})


def consumer_pause(out: Publisher, now_ns: int, stream: str, consumer: str, paused: bool,
                   pause_until_ns: int, domain: str | None = None) -> bool:
    return send(out, f"{PREFIX}CONSUMER.PAUSE.{stream}.{consumer}", "consumer_pause", now_ns,
                {"stream": stream, "consumer": consumer, "paused": paused,
                 "pause_until": rfc3339_ns(pause_until_ns), "domain": domain or None})


def consumer_pinned(out: Publisher, now_ns: int, account: str | None, stream: str,
                    consumer: str, group: str, pin_id: str, domain: str | None = None) -> bool:
    return send(out, f"{PREFIX}CONSUMER.PINNED.{stream}.{consumer}", "consumer_group_pinned",
                now_ns, {"account": account or None, "stream": stream, "consumer": consumer,
                         "domain": domain or None, "group": group, "pinned_id": pin_id})


def consumer_unpinned(out: Publisher, now_ns: int, account: str | None, stream: str,
                      consumer: str, group: str, reason: str, domain: str | None = None) -> bool:
    return send(out, f"{PREFIX}CONSUMER.UNPINNED.{stream}.{consumer}", "consumer_group_unpinned",
                now_ns, {"account": account or None, "stream": stream, "consumer": consumer,
                         "domain": domain or None, "group": group, "reason": reason})


def api_audit(out: Publisher, now_ns: int, server: str, client: dict[str, Any] | None,
              subject: str, request: bytes, response: dict[str, Any] | str,
              domain: str | None = None) -> bool:
    """A `$JS.API` request was answered (`response`: the JSON object sent, or its
    text when the answer was encoded already)."""
    if not out.has_interest(API_AUDIT):
        return False
    return send(out, API_AUDIT, "api_audit", now_ns, {
        "server": server,
        "client": client,
        "subject": subject,
        "request": request.decode("utf-8", "replace") or None,
        "response": response if isinstance(response, str) else json.dumps(response, separators=(",", ":")),
        "domain": domain or None,
    })
