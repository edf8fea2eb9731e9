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

A second cache serves subjects whose tail the trie never looks at: when
the walk consulted literal children only for the first `d` tokens (deeper,
only ``*``/``>`` children exist along its way), every subject with the same
first `d` tokens and the same number of tokens matches the same
subscriptions. Reply inboxes (``_INBOX.<id>.<n>`` under ``_INBOX.<id>.*``) and
ack subjects (``$JS.ACK.<9 tokens>`` under ``$JS.ACK.>``), a new subject per
message, are served this way by (first `d` tokens, token count), or by the
first `d` tokens alone when only the last token is left out (no count
needed then); any insert or remove clears these caches.
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


def filter_matches(filter_subject: str, subject: str) -> bool:
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


_MAX_DEPTHS: Final = 4


def _head(subject: str, depth: int) -> str:
    """The first `depth` tokens of `subject` (which has more than `depth`)."""
    pos = -1
    for _ in range(depth):
        pos = subject.find(TSEP, pos + 1)
    return subject[:pos] if depth else ""


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
        # (first d tokens, number of tokens) -> result, for subjects whose
        # further tokens do not matter (see the module docstring); `_depths`
        # lists the d values in use
        self._prefixes: dict[tuple[str, int], MatchResult[T]] = {}
        self._depths: list[int] = []
        # the same for d = all tokens but the last, keyed by those tokens alone
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
        if self._prefixes or self._heads:
            self._prefixes.clear()
            self._depths.clear()
            self._heads.clear()
        if not self._cache:
            return
        if PWC not in filter_subject and FWC not in filter_subject:
            self._cache.pop(filter_subject, None)
            return
        stale = [s for s in self._cache if filter_matches(filter_subject, s)]
        for s in stale:
            del self._cache[s]

    def match(self, subject: str) -> MatchResult[T]:
        """Everything whose filter matches the literal `subject` (cached)."""
        cached = self._cache.get(subject)
        if cached is not None:
            return cached
        dot = subject.rfind(TSEP)
        if dot > 0:
            # all tokens but the last (the count is implied): reply inboxes
            cached = self._heads.get(subject[:dot])
            if cached is not None:
                return cached
        n = subject.count(TSEP) + 1
        prefixes = self._prefixes
        if prefixes:
            find = subject.find
            for depth in self._depths:
                if depth < n:
                    pos = -1
                    for _ in range(depth):
                        pos = find(TSEP, pos + 1)
                    cached = prefixes.get((subject[:pos] if depth else "", n))
                    if cached is not None:
                        return cached
        result, depth = self._walk(subject)
        if depth == n - 1 and dot > 0:
            heads = self._heads
            if len(heads) >= self._cache_max:
                heads.clear()
            heads[subject[:dot]] = result
            return result
        if depth < n:
            if len(prefixes) >= self._cache_max or (
                depth not in self._depths and len(self._depths) >= _MAX_DEPTHS
            ):
                prefixes.clear()
                self._depths.clear()
            if depth not in self._depths:
                self._depths.append(depth)
            prefixes[(_head(subject, depth), n)] = result
            return result
        cache = self._cache
        if len(cache) >= self._cache_max:
            # drop the oldest half; dicts keep insertion order
            for key in list(itertools.islice(cache, self._cache_max // 2)):
                del cache[key]
        cache[subject] = result
        return result

    def _walk(self, subject: str) -> tuple[MatchResult[T], int]:
        """Trie walk: literal child, ``*`` child (explored later) and ``>`` child per token.

        Also returns how many leading tokens the result depends on: one past the
        deepest token looked up in a node that has literal children (the result
        holds for every subject with those first tokens and as many tokens)."""
        tokens = subject.split(TSEP)
        n = len(tokens)
        depth = 0
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
                if children:
                    if i >= depth:
                        depth = i + 1
                    node = children.get(tokens[i])
                else:
                    node = None
                i += 1
            if not stack:
                break
            node, i = stack.pop()
        if not plain and queues is None:
            # one shared empty result: unique subjects nobody listens to (reply
            # inboxes, probes) then cost no allocation beyond the cache slot
            return _EMPTY, depth  # type: ignore[return-value]
        return MatchResult(plain, queues if queues is not None else _NO_QUEUES), depth  # type: ignore[arg-type]

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
