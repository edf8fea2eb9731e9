"""Publish and subscribe permissions, sans-IO: nats-server's rules, decided per subject.

A user's `Permissions` (from the config file's ``permissions { publish,
subscribe, allow_responses }``) are plain frozen data, independent of how the
user logged in and of accounts. `PermissionRules.of(perms)` compiles them once
(shared by every session of that user); a session asks it and keeps its own
small caches (`PublishCache`, `DenyFilter`).

The rules, as nats-server applies them (server/client.go):

- Publish: with an ``allow`` list a subject must match one of its filters; a
  subject that matches a ``deny`` filter is refused even when allowed (deny
  wins). No ``allow`` list means everything not denied. ``allow_responses``
  turns the blanket allow off (an empty allow list) unless ``allow`` is
  given, and lets the client publish to the reply subject of a message it
  received, up to ``max`` times within ``expires`` (defaults 1 and 2m).
- Subscribe: a subscription subject (which may hold wildcards) is matched
  against the filters with its own tokens taken literally: ``foo.*`` is
  allowed by ``foo.*``, ``foo.>`` or ``*.*``, not by ``foo.bar``. An entry
  ``"<subject> <queue>"`` only permits (or denies) queue subscriptions in a
  matching queue group (the queue may be a wildcard pattern). With a queue:
  when an allow entry with a queue matches the subject, the queue must match
  one of those entries, whatever plain entries say. A deny entry with a queue
  denies only that group.
- A wildcard (or queue) subscription that overlaps a subscribe ``deny``
  filter is accepted, and messages whose subject matches the deny filter are
  not delivered to that client (`DenyFilter`).

Invariants: decisions never raise; a subject string is split at most once per
decision; the caches are bounded (oldest entries dropped first) and hold only
decisions that cannot change (response permissions are never cached).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from jetstream_server.core.subjects import filters_overlap, is_subset_filter

FWC: Final = ">"
PWC: Final = "*"

DEFAULT_RESPONSE_MAX_MSGS: Final = 1
DEFAULT_RESPONSE_EXPIRES_S: Final = 120.0
# per-session caches: nats-server keeps 128 publish decisions and 256 deny
# decisions; a dict lookup is cheap enough to keep more
PUB_CACHE_MAX: Final = 1024
DENY_CACHE_MAX: Final = 1024
_PRUNE: Final = 256
# tracked reply subjects (allow_responses): pruned past this many, or once a second
REPLY_PRUNE_COUNT: Final = 4096
REPLY_PRUNE_INTERVAL_NS: Final = 1_000_000_000


@dataclass(frozen=True, slots=True)
class SubjectPermission:
    """One direction's lists. `allow` None: no allow list (everything not
    denied); an empty tuple allows nothing. Entries may be ``"subject queue"``
    for subscriptions."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResponsePermission:
    """``allow_responses``: `max_msgs` replies per received request within
    `expires_s` (a value <= 0 means no limit on that axis)."""

    max_msgs: int = DEFAULT_RESPONSE_MAX_MSGS
    expires_s: float = DEFAULT_RESPONSE_EXPIRES_S


@dataclass(frozen=True, slots=True)
class Permissions:
    """A user's permissions; None for a direction means unrestricted."""

    publish: SubjectPermission | None = None
    subscribe: SubjectPermission | None = None
    responses: ResponsePermission | None = None

    def __post_init__(self) -> None:
        # allow_responses switches the blanket publish allow off, as nats-server does
        if self.responses is not None and (self.publish is None or self.publish.allow is None):
            deny = self.publish.deny if self.publish is not None else ()
            object.__setattr__(self, "publish", SubjectPermission((), deny))


def split_queue_entry(entry: str) -> tuple[str, str | None]:
    """``"foo.> q"`` -> ("foo.>", "q"); a plain subject -> (subject, None)."""
    parts = entry.split()
    if len(parts) == 2:
        return parts[0], parts[1]
    return entry.strip(), None


def _matches(ftoks: tuple[str, ...], stoks: list[str]) -> bool:
    """Does the filter (tokens) match the subject (tokens, taken literally)?"""
    n = len(stoks)
    for i, ft in enumerate(ftoks):
        if ft == FWC:
            return n > i
        if i >= n:
            return False
        if ft != PWC and ft != stoks[i]:
            return False
    return n == len(ftoks)


def _filter_regex(filter_subject: str) -> str:
    """A filter as a regular expression over a subject whose own wildcard
    characters are plain characters: ``*`` one token, a final ``>`` the rest
    (at least one token; subjects have no empty tokens)."""
    tokens = filter_subject.split(".")
    parts = []
    for i, token in enumerate(tokens):
        if token == FWC and i == len(tokens) - 1:
            parts.append(".+")
        elif token == PWC:
            parts.append("[^.]+")
        else:
            parts.append(re.escape(token))
    return r"\.".join(parts)


class FilterSet:
    """A list of subject filters, matched fast: literal filters in a set, the
    wildcard filters as one compiled regular expression (the match runs in C,
    one call per subject whatever the number of filters)."""

    __slots__ = ("literals", "_wild", "filters")

    def __init__(self, filters: tuple[str, ...] | list[str]) -> None:
        self.filters = tuple(filters)
        literals = []
        wild = []
        for f in self.filters:
            tokens = f.split(".")
            if PWC in tokens or FWC in tokens:
                wild.append(_filter_regex(f))
            else:
                literals.append(f)
        self.literals = frozenset(literals)
        self._wild = re.compile("|".join(f"(?:{w})" for w in wild)).fullmatch if wild else None

    def __bool__(self) -> bool:
        return bool(self.filters)

    def match(self, subject: str) -> bool:
        if subject in self.literals:
            return True
        wild = self._wild
        return wild is not None and wild(subject) is not None

    def overlaps(self, subject: str) -> bool:
        """Could some literal subject match both `subject` and one of the filters?"""
        return any(filters_overlap(f, subject) for f in self.filters)


def _queue_matches(queue: str, patterns: list[str]) -> bool:
    """nats-server's queueMatches: equal, or inside a wildcard queue pattern."""
    for qname in patterns:
        if queue == qname:
            return True
        qtoks = qname.split(".")
        if (PWC in qtoks or FWC in qtoks) and is_subset_filter(queue, qname):
            return True
    return False


class SubscribeRules:
    """The compiled subscribe lists (plain entries and queue entries apart)."""

    __slots__ = ("allow", "allow_queues", "deny", "deny_queues", "has_allow")

    def __init__(self, perm: SubjectPermission) -> None:
        # nats-server builds the subscribe allow list only when it is not empty
        self.has_allow = bool(perm.allow)
        allow_plain: list[str] = []
        self.allow_queues: list[tuple[tuple[str, ...], str]] = []
        for entry in perm.allow or ():
            subject, queue = split_queue_entry(entry)
            if queue is None:
                allow_plain.append(subject)
            else:
                self.allow_queues.append((tuple(subject.split(".")), queue))
        self.allow = FilterSet(allow_plain)
        deny_plain: list[str] = []
        self.deny_queues: list[tuple[tuple[str, ...], str]] = []
        for entry in perm.deny:
            subject, queue = split_queue_entry(entry)
            if queue is None:
                deny_plain.append(subject)
            else:
                self.deny_queues.append((tuple(subject.split(".")), queue))
        self.deny = FilterSet(deny_plain)

    def allowed(self, subject: str, queue: str | None) -> bool:
        stoks: list[str] | None = None
        ok = True
        if self.has_allow:
            ok = self.allow.match(subject)
            if queue:
                stoks = subject.split(".")
                matching = [q for ftoks, q in self.allow_queues if _matches(ftoks, stoks)]
                if matching:
                    ok = _queue_matches(queue, matching)
        if ok and (self.deny or self.deny_queues):
            ok = not self.deny.match(subject)
            if ok and queue and self.deny_queues:
                if stoks is None:
                    stoks = subject.split(".")
                matching = [q for ftoks, q in self.deny_queues if _matches(ftoks, stoks)]
                if matching:
                    ok = not _queue_matches(queue, matching)
        return ok

    def deny_collides(self, subject: str) -> bool:
        """Does a deny entry overlap `subject` (a wildcard or queue subscription)?"""
        if self.deny.overlaps(subject):
            return True
        return any(filters_overlap(".".join(ftoks), subject) for ftoks, _ in self.deny_queues)

    def delivery_denied(self, subject: str, queue: str | None) -> bool:
        """nats-server's checkDenySub: is a message on `subject` (to a
        subscription in `queue`) kept from the client?"""
        if self.deny.match(subject):
            return True
        if queue and self.deny_queues:
            stoks = subject.split(".")
            matching = [q for ftoks, q in self.deny_queues if _matches(ftoks, stoks)]
            return bool(matching) and _queue_matches(queue, matching)
        return False


@dataclass(frozen=True, eq=False)
class PermissionRules:
    """`Permissions` compiled for fast decisions; one per distinct Permissions."""

    permissions: Permissions
    pub_allow: FilterSet | None = field(init=False)
    pub_deny: FilterSet | None = field(init=False)
    sub: SubscribeRules | None = field(init=False)
    responses: ResponsePermission | None = field(init=False)

    def __post_init__(self) -> None:
        perms = self.permissions
        pub = perms.publish
        set_ = object.__setattr__
        set_(self, "pub_allow", FilterSet(pub.allow) if pub and pub.allow is not None else None)
        set_(self, "pub_deny", FilterSet(pub.deny) if pub and pub.deny else None)
        sub = perms.subscribe
        set_(self, "sub", SubscribeRules(sub) if sub and (sub.allow or sub.deny) else None)
        set_(self, "responses", perms.responses)

    @staticmethod
    def of(permissions: Permissions) -> PermissionRules:
        return _compile(permissions)

    @property
    def restricts_publish(self) -> bool:
        return self.pub_allow is not None or self.pub_deny is not None

    def publish_allowed(self, subject: str) -> bool:
        """The static decision (allow, then deny); responses are the session's."""
        if self.pub_allow is not None and not self.pub_allow.match(subject):
            return False
        return not (self.pub_deny is not None and self.pub_deny.match(subject))

    def subscribe_allowed(self, subject: str, queue: str | None = None) -> bool:
        return self.sub is None or self.sub.allowed(subject, queue)


@lru_cache(maxsize=256)
def _compile(permissions: Permissions) -> PermissionRules:
    return PermissionRules(permissions)


def prune_oldest(cache: dict[Any, bool], count: int = _PRUNE) -> None:
    """Drop the `count` oldest entries of an insertion-ordered cache."""
    for key in list(itertools.islice(cache, count)):
        del cache[key]
