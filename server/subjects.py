"""NATS subjects: validation, wildcard matching and the subscription index.

A subject is a non-empty sequence of dot-separated tokens. A token is never
empty and never contains whitespace. In a *filter* (subscriptions, stream
subjects, consumer filters) a token that is exactly ``*`` matches one token
and a final token that is exactly ``>`` matches one or more tokens; a token
that merely contains ``*`` or ``>`` (``a*b``) is a literal. A *publish*
subject is a literal subject (no wildcard tokens).

`SubjectIndex` is the broker's routing table: a token trie (literal children,
one ``*`` child, one ``>`` child per node) so that a publish walks the tokens
of its subject instead of scanning every subscription, plus a bounded result
cache keyed by subject. Invariants: a cached result is always equal to what a
trie walk would return; inserting or removing a filter drops exactly the
cached subjects that filter matches (a literal filter drops one entry).

A second cache serves subjects whose last token the trie never looks at:
when no node reached by all tokens but the last has a literal child, every
subject with that head and one more token matches the same subscriptions
(reply inboxes such as ``_INBOX.<id>.<n>`` under a ``_INBOX.<id>.*``
subscription, a new subject per request). Such results are cached by head
only, and any insert or remove clears that cache.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from typing import Final, Generic, TypeVar

PWC: Final = "*"
FWC: Final = ">"
TSEP: Final = "."
CACHE_MAX: Final = 4096

_WHITESPACE: Final = frozenset(" \t\r\n\f\v")


def _tokens_ok(subject: str) -> bool:
    if not subject:
        return False
    for ch in subject:
        if ch in _WHITESPACE:
            return False
    return "" not in subject.split(TSEP)


def is_valid_subject(subject: str) -> bool:
    """A syntactically valid filter: wildcards allowed, ``>`` only as the last token."""
    if not _tokens_ok(subject):
        return False
    tokens = subject.split(TSEP)
    for i, token in enumerate(tokens):
        if token == FWC and i != len(tokens) - 1:
            return False
    return True


def is_valid_publish_subject(subject: str) -> bool:
    """A literal subject: valid and without wildcard tokens."""
    if not _tokens_ok(subject):
        return False
    return all(token not in (PWC, FWC) for token in subject.split(TSEP))


is_valid_literal_subject = is_valid_publish_subject


def has_wildcard(subject: str) -> bool:
    """True when some token is exactly ``*`` or ``>``."""
    if PWC not in subject and FWC not in subject:
        return False
    return any(token in (PWC, FWC) for token in subject.split(TSEP))


def is_valid_queue_name(queue: str) -> bool:
    return bool(queue) and not any(ch in _WHITESPACE for ch in queue)


def subject_matches(filter_subject: str, subject: str) -> bool:
    """Does the literal `subject` match `filter_subject` (which may hold wildcards)?"""
    if filter_subject == subject:
        return True
    if PWC not in filter_subject and FWC not in filter_subject:
        return False
    ftoks = filter_subject.split(TSEP)
    stoks = subject.split(TSEP)
    for i, ftok in enumerate(ftoks):
        if ftok == FWC and i == len(ftoks) - 1:
            return len(stoks) > i
        if i >= len(stoks):
            return False
        if ftok != PWC and ftok != stoks[i]:
            return False
    return len(stoks) == len(ftoks)


def filters_overlap(a: str, b: str) -> bool:
    """Could some literal subject match both filters?"""
    atoks = a.split(TSEP)
    btoks = b.split(TSEP)
    for i in range(max(len(atoks), len(btoks))):
        ta = atoks[i] if i < len(atoks) else None
        tb = btoks[i] if i < len(btoks) else None
        if ta == FWC or tb == FWC:
            return ta is not None and tb is not None
        if ta is None or tb is None:
            return False
        if ta != tb and ta != PWC and tb != PWC:
            return False
    return True


def is_subset_filter(sub: str, sup: str) -> bool:
    """Does every subject matched by `sub` also match `sup`?"""
    stoks = sub.split(TSEP)
    ptoks = sup.split(TSEP)
    for i, pt in enumerate(ptoks):
        if pt == FWC:
            return len(stoks) > i
        if i >= len(stoks):
            return False
        st = stoks[i]
        if st == FWC:
            return False
        if pt != PWC and (st == PWC or st != pt):
            return False
    return len(stoks) == len(ptoks)


T = TypeVar("T", bound=Hashable)


class _Node(Generic[T]):
    __slots__ = ("children", "pwc", "fwc", "plain", "queues")

    def __init__(self) -> None:
        self.children: dict[str, _Node[T]] = {}
        self.pwc: _Node[T] | None = None
        self.fwc: _Node[T] | None = None
        # insertion-ordered sets (dict keys) keep delivery order stable
        self.plain: dict[T, None] = {}
        self.queues: dict[str, dict[T, None]] = {}

    def empty(self) -> bool:
        return not (self.children or self.pwc or self.fwc or self.plain or self.queues)


class MatchResult(Generic[T]):
    """Subscriptions matching one subject: plain ones and queue groups (name -> members).

    Read-only: results are cached and shared (empty ones are one shared object)."""

    __slots__ = ("plain", "queues")

    def __init__(self, plain: list[T], queues: dict[str, list[T]]) -> None:
        self.plain = plain
        self.queues = queues

    def __bool__(self) -> bool:
        return bool(self.plain or self.queues)

    def __len__(self) -> int:
        return len(self.plain) + sum(len(m) for m in self.queues.values())


_NO_QUEUES: dict[str, list[Hashable]] = {}
_EMPTY: MatchResult[Hashable] = MatchResult([], _NO_QUEUES)


def _merge_queues(
    into: dict[str, list[T]] | None, groups: dict[str, dict[T, None]]
) -> dict[str, list[T]]:
    out: dict[str, list[T]] = {} if into is None else into
    for name, members in groups.items():
        if name in out:
            out[name].extend(members)
        else:
            out[name] = list(members)
    return out


class SubjectIndex(Generic[T]):
    """Filters mapped to subscription values, matched by literal subjects."""

    def __init__(self, cache_max: int = CACHE_MAX) -> None:
        self._root: _Node[T] = _Node()
        self._cache: dict[str, MatchResult[T]] = {}
        # head (all tokens but the last) -> result, for subjects whose last
        # token does not matter (see the module docstring)
        self._heads: dict[str, MatchResult[T]] = {}
        self._cache_max = cache_max
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def insert(self, filter_subject: str, value: T, queue: str | None = None) -> None:
        node = self._root
        for token in filter_subject.split(TSEP):
            if token == PWC:
                if node.pwc is None:
                    node.pwc = _Node()
                node = node.pwc
            elif token == FWC:
                if node.fwc is None:
                    node.fwc = _Node()
                node = node.fwc
            else:
                child = node.children.get(token)
                if child is None:
                    child = node.children[token] = _Node()
                node = child
        if queue is None:
            if value in node.plain:
                return
            node.plain[value] = None
        else:
            members = node.queues.setdefault(queue, {})
            if value in members:
                return
            members[value] = None
        self._count += 1
        self._invalidate(filter_subject)

    def remove(self, filter_subject: str, value: T, queue: str | None = None) -> bool:
        path: list[tuple[_Node[T], str]] = []
        node: _Node[T] | None = self._root
        for token in filter_subject.split(TSEP):
            assert node is not None
            path.append((node, token))
            if token == PWC:
                node = node.pwc
            elif token == FWC:
                node = node.fwc
            else:
                node = node.children.get(token)
            if node is None:
                return False
        assert node is not None
        if queue is None:
            if value not in node.plain:
                return False
            del node.plain[value]
        else:
            members = node.queues.get(queue)
            if members is None or value not in members:
                return False
            del members[value]
            if not members:
                del node.queues[queue]
        self._count -= 1
        # prune empty nodes bottom-up
        child = node
        for parent, token in reversed(path):
            if not child.empty():
                break
            if token == PWC:
                parent.pwc = None
            elif token == FWC:
                parent.fwc = None
            else:
                del parent.children[token]
            child = parent
        self._invalidate(filter_subject)
        return True

    def _invalidate(self, filter_subject: str) -> None:
        if self._heads:
            self._heads.clear()
        if not self._cache:
            return
        if PWC not in filter_subject and FWC not in filter_subject:
            self._cache.pop(filter_subject, None)
            return
        stale = [s for s in self._cache if subject_matches(filter_subject, s)]
        for s in stale:
            del self._cache[s]

    def match(self, subject: str) -> MatchResult[T]:
        """Everything whose filter matches the literal `subject` (cached)."""
        cached = self._cache.get(subject)
        if cached is not None:
            return cached
        dot = subject.rfind(TSEP)
        if dot > 0:
            head = subject[:dot]
            cached = self._heads.get(head)
            if cached is not None:
                return cached
        result, last_ignored = self._walk(subject)
        if last_ignored and dot > 0:
            heads = self._heads
            if len(heads) >= self._cache_max:
                heads.clear()
            heads[head] = result
            return result
        cache = self._cache
        if len(cache) >= self._cache_max:
            # drop the oldest half; dicts keep insertion order
            for key in list(itertools.islice(cache, self._cache_max // 2)):
                del cache[key]
        cache[subject] = result
        return result

    def _walk(self, subject: str) -> tuple[MatchResult[T], bool]:
        """Trie walk: literal child, ``*`` child (explored later) and ``>`` child per token.

        Also says whether the result holds for any last token: no node that
        the walk looked the last token up in had a literal child."""
        tokens = subject.split(TSEP)
        n = len(tokens)
        last = n - 1
        last_ignored = True
        plain: list[T] = []
        queues: dict[str, list[T]] | None = None
        stack: list[tuple[_Node[T], int]] = []
        node: _Node[T] | None = self._root
        i = 0
        while True:
            while node is not None:
                fwc = node.fwc
                if fwc is not None and i < n:
                    if fwc.plain:
                        plain.extend(fwc.plain)
                    if fwc.queues:
                        queues = _merge_queues(queues, fwc.queues)
                if i == n:
                    if node.plain:
                        plain.extend(node.plain)
                    if node.queues:
                        queues = _merge_queues(queues, node.queues)
                    break
                if node.pwc is not None:
                    stack.append((node.pwc, i + 1))
                children = node.children
                if i == last and children:
                    last_ignored = False
                node = children.get(tokens[i])
                i += 1
            if not stack:
                break
            node, i = stack.pop()
        if not plain and queues is None:
            # one shared empty result: unique subjects nobody listens to (reply
            # inboxes, probes) then cost no allocation beyond the cache slot
            return _EMPTY, last_ignored  # type: ignore[return-value]
        return MatchResult(plain, queues if queues is not None else _NO_QUEUES), last_ignored  # type: ignore[arg-type]

    def has_interest(self, subject: str) -> bool:
        return bool(self.match(subject))

    def values(self) -> Iterable[T]:
        stack = [self._root]
        while stack:
            node = stack.pop()
            yield from node.plain
            for members in node.queues.values():
                yield from members
            stack.extend(node.children.values())
            if node.pwc is not None:
                stack.append(node.pwc)
            if node.fwc is not None:
                stack.append(node.fwc)
