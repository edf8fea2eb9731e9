"""Exports and imports between accounts, sans-IO: links between two routers.

nats-server lets an account export a stream (messages) or a service
(requests) and another account import it. Each account here has its own
router (broker); an import is a link:

- `StreamLink`: an internal subscription in the exporting account on the
  import's subject; every message is published in the importing account
  under the local subject (``prefix.<subject>``, or the ``to`` mapping),
  reply and headers kept.
- `ServiceLink`: an internal subscription in the importing account on the
  local subject (``to``, default the exported subject); a request is
  published in the exporting account under the exported subject with a
  fresh reply subject ``_R_.<id>.<n>``, whose answers go back to the
  requester's reply in the importing account: the first answer only for
  ``singleton`` services (the default), every answer until the response
  threshold passes for ``stream`` and ``chunked`` ones.

`map_subject(subject, src, dst)` carries the tokens the wildcards of `src`
matched into the wildcards of `dst` (in order; ``>`` takes the rest).

Invariants: a link never forwards a message it is itself forwarding (two
accounts importing each other's subjects do not loop); a service link
keeps at most `MAX_PENDING_RESPONSES` reply mappings, dropping the oldest,
and drops expired ones when it makes a new one, so requests without
answers cost bounded memory.
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from jetstream_server.core.router import Router

MAX_PENDING_RESPONSES: Final = 10_000
DEFAULT_RESPONSE_THRESHOLD_NS: Final = 120 * 10**9  # nats-server's 2 minutes


def map_subject(subject: str, src: str, dst: str) -> str:
    """`subject` (which matches pattern `src`) as `dst` sees it."""
    if src == dst:
        return subject
    tokens = subject.split(".")
    captured: list[str] = []
    for i, want in enumerate(src.split(".")):
        if want == ">":
            captured.append(".".join(tokens[i:]))
            break
        if want == "*":
            captured.append(tokens[i])
    out: list[str] = []
    it = iter(captured)
    for token in dst.split("."):
        out.append(next(it, token) if token in ("*", ">") else token)
    return ".".join(out)


class StreamLink:
    """Messages on `subject` in the exporter, republished in the importer as `local`."""

    def __init__(self, exporter: Router, importer: Router, subject: str, local: str) -> None:
        self.exporter = exporter
        self.importer = importer
        self.subject = subject
        self.local = local
        self._busy = False
        self._sub: int | None = None

    def start(self, router: Router | None = None) -> None:
        """Start forwarding (a `Service`: the router given is not used)."""
        self._sub = self.exporter.subscribe(self.subject, self._forward)

    def close(self) -> None:
        if self._sub is not None:
            self.exporter.unsubscribe(self._sub)
            self._sub = None

    def _forward(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            self.importer.publish(map_subject(subject, self.subject, self.local), reply, headers, payload)
        finally:
            self._busy = False


class ServiceLink:
    """Requests on `local` in the importer, served by `subject` in the exporter."""

    def __init__(
        self,
        exporter: Router,
        importer: Router,
        subject: str,
        local: str,
        now_ns: Callable[[], int],
        singleton: bool = True,
        threshold_ns: int = DEFAULT_RESPONSE_THRESHOLD_NS,
    ) -> None:
        self.exporter = exporter
        self.importer = importer
        self.subject = subject
        self.local = local
        self.singleton = singleton
        self.threshold_ns = threshold_ns
        self._now_ns = now_ns
        self._prefix = f"_R_.{secrets.token_hex(5)}."
        self._ids = itertools.count(1)
        # reply subject in the exporter -> (requester's reply, internal sub id, created ns)
        self._pending: OrderedDict[str, tuple[str, int, int]] = OrderedDict()
        self._busy = False
        self._sub: int | None = None

    def start(self, router: Router | None = None) -> None:
        """Start serving (a `Service`: the router given is not used)."""
        self._sub = self.importer.subscribe(self.local, self._request)

    def close(self) -> None:
        if self._sub is not None:
            self.importer.unsubscribe(self._sub)
            self._sub = None
        for _, sub_id, _ in self._pending.values():
            self.exporter.unsubscribe(sub_id)
        self._pending.clear()

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _request(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        if self._busy:
            return
        target = map_subject(subject, self.local, self.subject)
        mapped: str | None = None
        if reply:
            self._expire()
            mapped = f"{self._prefix}{next(self._ids)}"
            sub_id = self.exporter.subscribe(mapped, self._response)
            self._pending[mapped] = (reply, sub_id, self._now_ns())
            while len(self._pending) > MAX_PENDING_RESPONSES:
                _, (_, old_sub, _) = self._pending.popitem(last=False)
                self.exporter.unsubscribe(old_sub)
        self._busy = True
        try:
            self.exporter.publish(target, mapped, headers, payload)
        finally:
            self._busy = False

    def _response(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        entry = self._pending.get(subject)
        if entry is None:
            return
        requester, sub_id, _ = entry
        if self.singleton:
            del self._pending[subject]
            self.exporter.unsubscribe(sub_id)
        self.importer.publish(requester, None, headers, payload)

    def _expire(self) -> None:
        now = self._now_ns()
        while self._pending:
            key, (_, sub_id, created) = next(iter(self._pending.items()))
            if now - created <= self.threshold_ns:
                return
            del self._pending[key]
            self.exporter.unsubscribe(sub_id)
