"""NATS subjects: validation, wildcard matching and the subscription index.

A subject is a non-empty sequence of dot-separated tokens. A token is never
empty and never contains whitespace. In a *filter* (subscriptions, stream
subjects, consumer filters) a token that is exactly ``*`` matches one token
and a final token that is exactly ``>`` matches one or more tokens; a token
that merely contains ``*`` or ``>`` (``a*b``) is a literal. A *publish*
subject is a literal subject (no wildcard tokens).

`SubjectIndex` is the broker's routing table: literal filters in a dict keyed
by the whole subject, wildcard filters in a token trie (literal children, one
``*`` child, one ``>`` child per node, each collection made when first needed)
so that a publish walks the tokens of its subject instead of scanning every
subscription, plus a bounded result cache keyed by subject. Invariants: a
cached result is always equal to the trie walk plus the literal entry;
inserting or removing a literal filter drops its one cached subject; a
wildcard filter drops the cached subjects it matches (the whole cache when it
holds over `_SCAN_MAX`, never a scan of thousands).

A second cache serves subjects whose tail the trie never looks at: when
the walk consulted literal children only for the first `d` tokens (deeper,
only ``*``/``>`` children exist along its way), every subject with the same
first `d` tokens and the same number of tokens matches the same
subscriptions. Reply inboxes (``_INBOX.<id>.<n>`` under ``_INBOX.<id>.*``) and
ack subjects (``$JS.ACK.<9 tokens>`` under ``$JS.ACK.>``), a new subject per
message, are served this way by (first `d` tokens, token count), or by the
first `d` tokens alone when only the last token is left out (no count
needed then); any insert or remove clears these caches.

Deep filters: a wildcard filter of more than `DEEP_TOKENS` tokens (legal once
`max_control_line` is raised: 1 MB of ``*.`` is 512k tokens) is not put in the
trie, which would cost a node per token and a Python step per token on every
insert, match and removal. It is kept whole, grouped by its token count (or,
ending in ``>``, by the count before it), with the positions of its literal
tokens: a subject matches it when the counts agree and the subject's tokens at
those positions (picked in C by `operator.itemgetter`) equal the filter's.
Only a subject of more than `DEEP_TOKENS` tokens can match a deep filter, so
every other subject never looks at them; the trie is never deeper than
`DEEP_TOKENS`, so a walk splits a subject into at most that many tokens.
Inserting or removing a deep filter is C-speed work on its text (a split, a
count) and clears the result cache if it holds a deep subject.

Subjects longer than `CACHE_SUBJECT_MAX` bytes are matched but never cached
(a cache of 4,096 one-megabyte subjects would hold gigabytes).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Final, Generic, TypeVar

PWC: Final = "*"
FWC: Final = ">"
TSEP: Final = "."
CACHE_MAX: Final = 4096
DEEP_TOKENS = 64  # a wildcard filter with more tokens is kept outside the trie (not Final: see PAGE_ENTRIES)
CACHE_SUBJECT_MAX: Final = 4096  # longer subjects are matched but not cached

# validation runs in C (str methods, one regex), never a Python loop per character:
# a subject may be as long as `max_control_line`, which users raise
_WHITESPACE_RE: Final = re.compile(r"[ \t\r\n\f\v]")


def _tokens_ok(subject: str) -> bool:
    """Non-empty, no whitespace, no empty token."""
    return (
        bool(subject)
        and subject[0] != TSEP
        and subject[-1] != TSEP
        and ".." not in subject
        and _WHITESPACE_RE.search(subject) is None
    )


def _has_token(subject: str, token: str) -> bool:
    """Is some token of `subject` exactly `token` (a one-character token)?"""
    return (
        subject == token
        or subject.startswith(token + TSEP)
        or subject.endswith(TSEP + token)
        or f"{TSEP}{token}{TSEP}" in subject
    )


def is_valid_subject(subject: str) -> bool:
    """A syntactically valid filter: wildcards allowed, ``>`` only as the last token."""
    if not _tokens_ok(subject):
        return False
    return not (subject.startswith(FWC + TSEP) or f"{TSEP}{FWC}{TSEP}" in subject)


def is_valid_publish_subject(subject: str) -> bool:
    """A literal subject: valid and without wildcard tokens."""
    return _tokens_ok(subject) and not has_wildcard(subject)


is_valid_literal_subject = is_valid_publish_subject


def has_wildcard(subject: str) -> bool:
    """True when some token is exactly ``*`` or ``>``."""
    if PWC not in subject and FWC not in subject:
        return False
    return _has_token(subject, PWC) or _has_token(subject, FWC)


def is_valid_queue_name(queue: str) -> bool:
    return bool(queue) and _WHITESPACE_RE.search(queue) is None


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
    """A trie node; each of its collections is made when first needed (a long
    wildcard filter is one node per token: most of them hold one child only)."""

    __slots__ = ("children", "pwc", "fwc", "plain", "queues")

    def __init__(self) -> None:
        self.children: dict[str, _Node[T]] | None = None
        self.pwc: _Node[T] | None = None
        self.fwc: _Node[T] | None = None
        # insertion-ordered sets (dict keys) keep delivery order stable
        self.plain: dict[T, None] | None = None
        self.queues: dict[str, dict[T, None]] | None = None

    def empty(self) -> bool:
        return not (self.children or self.pwc or self.fwc or self.plain or self.queues)

    def add(self, value: T, queue: str | None) -> bool:
        """Add `value` here (to queue group `queue`); False when it was already."""
        if queue is None:
            if self.plain is None:
                self.plain = {}
            elif value in self.plain:
                return False
            self.plain[value] = None
            return True
        if self.queues is None:
            self.queues = {}
        members = self.queues.setdefault(queue, {})
        if value in members:
            return False
        members[value] = None
        return True

    def discard(self, value: T, queue: str | None) -> bool:
        """Remove `value`; False when it was not here."""
        if queue is None:
            if not self.plain or value not in self.plain:
                return False
            del self.plain[value]
            return True
        members = self.queues.get(queue) if self.queues else None
        if members is None or value not in members:
            return False
        del members[value]
        if not members:
            del self.queues[queue]  # type: ignore[union-attr]
        return True


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


class _DeepFilter(Generic[T]):
    """A wildcard filter of more than `DEEP_TOKENS` tokens, matched whole.

    `pick` takes the tokens at the positions of the filter's literal tokens out of
    a subject's tokens (None when every token is a wildcard: the count decides);
    `expect` is what it takes out of the filter's own."""

    __slots__ = ("entry", "pick", "expect")

    def __init__(self, filter_subject: str, fwc: bool) -> None:
        self.entry: _Node[T] = _Node()
        self.pick: Callable[[list[str]], Any] | None = None
        self.expect: Any = None
        if filter_subject.replace(PWC + TSEP, "") in (PWC, FWC):
            return  # only wildcard tokens (`*.*. ... .>`): the token count decides
        tokens = filter_subject.split(TSEP)
        if fwc:
            tokens.pop()
        # positions of the literal tokens, found in C (no Python step per token)
        positions = list(
            itertools.compress(range(len(tokens)), map(operator.ne, tokens, itertools.repeat(PWC)))
        )
        if positions:
            self.pick = operator.itemgetter(*positions)
            self.expect = self.pick(tokens)


_MAX_DEPTHS: Final = 4
_SCAN_MAX: Final = 64  # a cache larger than this is dropped whole when a wildcard filter changes


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
    """Filters mapped to subscription values, matched by literal subjects.

    Literal filters (no wildcard token) live in a dict keyed by the whole
    subject, not in the trie: inserting, matching and removing one costs a hash
    of the subject whatever its length, and the prefix caches (which describe
    the trie alone) stay valid when they come and go."""

    def __init__(self, cache_max: int = CACHE_MAX) -> None:
        self._root: _Node[T] = _Node()
        # a literal filter's subscriptions: the one plain value itself (one object per
        # subscription for the garbage collector to walk, not three), else a node
        self._literals: dict[str, T | _Node[T]] = {}
        self._cache: dict[str, MatchResult[T]] = {}
        # (first d tokens, number of tokens) -> result of the trie, for subjects
        # whose further tokens do not matter (see the module docstring); `_depths`
        # lists the d values in use
        self._prefixes: dict[tuple[str, int], MatchResult[T]] = {}
        self._depths: list[int] = []
        # the same for d = all tokens but the last, keyed by those tokens alone
        self._heads: dict[str, MatchResult[T]] = {}
        self._cache_max = cache_max
        self._count = 0
        # deep filters (module docstring): filter -> its entry, and the same grouped
        # by token count (`_deep_exact`) or, ending in `>`, by the count before it
        self._deep: dict[str, _DeepFilter[T]] = {}
        self._deep_exact: dict[int, dict[str, _DeepFilter[T]]] = {}
        self._deep_fwc: dict[int, dict[str, _DeepFilter[T]]] = {}
        self._deep_cached = False  # the result cache may hold a subject of > DEEP_TOKENS

    def __len__(self) -> int:
        return self._count

    @property
    def deep_filters(self) -> int:
        """How many deep filters (kept outside the trie) there are."""
        return len(self._deep)

    def insert(self, filter_subject: str, value: T, queue: str | None = None) -> None:
        if not has_wildcard(filter_subject):
            self._insert_literal(filter_subject, value, queue)
            return
        ntokens = filter_subject.count(TSEP) + 1
        if ntokens > DEEP_TOKENS:
            self._insert_deep(filter_subject, ntokens, value, queue)
            return
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
                children = node.children
                if children is None:
                    children = node.children = {}
                child = children.get(token)
                if child is None:
                    child = children[token] = _Node()
                node = child
        if node.add(value, queue):
            self._count += 1
            self._invalidate(filter_subject)

    def remove(self, filter_subject: str, value: T, queue: str | None = None) -> bool:
        if not has_wildcard(filter_subject):
            return self._remove_literal(filter_subject, value, queue)
        deep = self._deep.get(filter_subject)
        if deep is not None:
            return self._remove_deep(filter_subject, deep, value, queue)
        if filter_subject.count(TSEP) >= DEEP_TOKENS:
            return False  # a deep filter nobody holds
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
                node = node.children.get(token) if node.children else None
            if node is None:
                return False
        assert node is not None
        if not node.discard(value, queue):
            return False
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
                assert parent.children is not None
                del parent.children[token]
                if not parent.children:
                    parent.children = None
            child = parent
        self._invalidate(filter_subject)
        return True

    def _insert_literal(self, subject: str, value: T, queue: str | None) -> None:
        literals = self._literals
        entry = literals.get(subject)
        if entry is None:
            if queue is None:
                literals[subject] = value  # the common case: no node, no set
                self._count += 1
                self._cache.pop(subject, None)
                return
            entry = literals[subject] = _Node()
        elif type(entry) is not _Node:
            if queue is None and (entry is value or entry == value):
                return
            node: _Node[T] = _Node()
            node.add(entry, None)  # type: ignore[arg-type]
            entry = literals[subject] = node
        if entry.add(value, queue):
            self._count += 1
            self._cache.pop(subject, None)

    def _remove_literal(self, subject: str, value: T, queue: str | None) -> bool:
        literals = self._literals
        entry = literals.get(subject)
        if entry is None:
            return False
        if type(entry) is not _Node:
            if queue is not None or not (entry is value or entry == value):
                return False
            del literals[subject]
        else:
            if not entry.discard(value, queue):
                return False
            if not (entry.plain or entry.queues):
                del literals[subject]
        self._count -= 1
        self._cache.pop(subject, None)
        return True

    def _deep_group(self, filter_subject: str, ntokens: int) -> dict[str, _DeepFilter[T]]:
        """The group a deep filter belongs to (made when missing)."""
        if filter_subject.endswith(TSEP + FWC):
            return self._deep_fwc.setdefault(ntokens - 1, {})
        return self._deep_exact.setdefault(ntokens, {})

    def _insert_deep(self, filter_subject: str, ntokens: int, value: T, queue: str | None) -> None:
        deep = self._deep.get(filter_subject)
        if deep is None:
            fwc = filter_subject.endswith(TSEP + FWC)
            deep = self._deep[filter_subject] = _DeepFilter(filter_subject, fwc)
            self._deep_group(filter_subject, ntokens)[filter_subject] = deep
        if deep.entry.add(value, queue):
            self._count += 1
            self._drop_deep_results()

    def _remove_deep(
        self, filter_subject: str, deep: _DeepFilter[T], value: T, queue: str | None
    ) -> bool:
        entry = deep.entry
        if not entry.discard(value, queue):
            return False
        self._count -= 1
        if not (entry.plain or entry.queues):
            del self._deep[filter_subject]
            fwc = filter_subject.endswith(TSEP + FWC)
            groups = self._deep_fwc if fwc else self._deep_exact
            key = filter_subject.count(TSEP) + (0 if fwc else 1)
            group = groups[key]
            del group[filter_subject]
            if not group:
                del groups[key]
        self._drop_deep_results()
        return True

    def _drop_deep_results(self) -> None:
        """A deep filter came or went: cached results of deep subjects are stale (the
        trie's prefix caches are not: they describe the trie alone)."""
        if self._deep_cached:
            self._cache.clear()
            self._deep_cached = False

    def _deep_match(self, subject: str, ntokens: int) -> list[_Node[T]]:
        """The entries of the deep filters a subject of `ntokens` tokens matches."""
        tokens: list[str] | None = None
        found: list[_Node[T]] = []
        groups = []
        exact = self._deep_exact.get(ntokens)
        if exact:
            groups.append(exact)
        for before, group in self._deep_fwc.items():
            if before < ntokens:
                groups.append(group)
        for group in groups:
            for deep in group.values():
                pick = deep.pick
                if pick is not None:
                    if tokens is None:
                        tokens = subject.split(TSEP)
                    if pick(tokens) != deep.expect:
                        continue
                found.append(deep.entry)
        return found

    def _invalidate(self, filter_subject: str) -> None:
        """A wildcard filter came or went: the trie's caches are stale, and so are
        the cached subjects it matches (all of them dropped when there are many:
        one C-speed clear, not a match per cached subject)."""
        if self._prefixes or self._heads:
            self._prefixes.clear()
            self._depths.clear()
            self._heads.clear()
        cache = self._cache
        if not cache:
            return
        if len(cache) > _SCAN_MAX:
            cache.clear()
            return
        stale = [s for s in cache if filter_matches(filter_subject, s)]
        for s in stale:
            del cache[s]

    def match(self, subject: str) -> MatchResult[T]:
        """Everything whose filter matches the literal `subject` (cached)."""
        cached = self._cache.get(subject)
        if cached is not None:
            return cached
        result, whole = self._trie_match(subject)
        literal = self._literals.get(subject)
        if literal is not None:
            result = _with_entry(result, literal)
            whole = True
        if self._deep:
            ntokens = subject.count(TSEP) + 1
            if ntokens > DEEP_TOKENS:
                for entry in self._deep_match(subject, ntokens):
                    result = _with_entry(result, entry)
                whole = True
        if not whole or len(subject) > CACHE_SUBJECT_MAX:
            return result
        if not self._deep_cached and subject.count(TSEP) >= DEEP_TOKENS:
            self._deep_cached = True
        cache = self._cache
        if len(cache) >= self._cache_max:
            # drop the oldest half; dicts keep insertion order
            for key in list(itertools.islice(cache, self._cache_max // 2)):
                del cache[key]
        cache[subject] = result
        return result

    def _trie_match(self, subject: str) -> tuple[MatchResult[T], bool]:
        """What the trie (the wildcard filters) matches, from its prefix caches or a
        walk; True when the result is for this whole subject only (to be cached by
        subject), False when a prefix cache holds it."""
        dot = subject.rfind(TSEP)
        if dot > 0:
            # all tokens but the last (the count is implied): reply inboxes
            cached = self._heads.get(subject[:dot])
            if cached is not None:
                return cached, False
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
                        return cached, False
        result, depth = self._walk(subject, n)
        if len(subject) > CACHE_SUBJECT_MAX:
            return result, True  # (not cached by `match` either)
        if depth == n - 1 and dot > 0:
            heads = self._heads
            if len(heads) >= self._cache_max:
                heads.clear()
            heads[subject[:dot]] = result
            return result, False
        if depth < n:
            if len(prefixes) >= self._cache_max or (
                depth not in self._depths and len(self._depths) >= _MAX_DEPTHS
            ):
                prefixes.clear()
                self._depths.clear()
            if depth not in self._depths:
                self._depths.append(depth)
            prefixes[(_head(subject, depth), n)] = result
            return result, False
        return result, True

    def _walk(self, subject: str, n: int) -> tuple[MatchResult[T], int]:
        """Trie walk: literal child, ``*`` child (explored later) and ``>`` child per
        token, for a subject of `n` tokens.

        Also returns how many leading tokens the result depends on: one past the
        deepest token looked up in a node that has literal children (the result
        holds for every subject with those first tokens and as many tokens).
        The trie is at most `DEEP_TOKENS` deep: no more tokens are split off."""
        tokens = subject.split(TSEP, DEEP_TOKENS)
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
        for entry in self._literals.values():
            if type(entry) is _Node:
                yield from _entry_values(entry)
            else:
                yield entry  # type: ignore[misc]
        for deep in self._deep.values():
            yield from _entry_values(deep.entry)
        stack = [self._root]
        while stack:
            node = stack.pop()
            yield from _entry_values(node)
            if node.children:
                stack.extend(node.children.values())
            if node.pwc is not None:
                stack.append(node.pwc)
            if node.fwc is not None:
                stack.append(node.fwc)


def _entry_values(node: _Node[T]) -> Iterable[T]:
    if node.plain:
        yield from node.plain
    if node.queues:
        for members in node.queues.values():
            yield from members


def _with_entry(result: MatchResult[T], entry: T | _Node[T]) -> MatchResult[T]:
    """`result` (shared, read-only) plus the values of a filter's entry (a node, or
    a literal filter's one plain value)."""
    if type(entry) is not _Node:
        return MatchResult([*result.plain, entry], result.queues)  # type: ignore[list-item]
    assert isinstance(entry, _Node)
    plain = list(result.plain)
    if entry.plain:
        plain.extend(entry.plain)
    queues: dict[str, list[T]] | None = None
    if result.queues:
        queues = {name: list(members) for name, members in result.queues.items()}
    if entry.queues:
        queues = _merge_queues(queues, entry.queues)
    if not plain and queues is None:
        return result
    return MatchResult(plain, queues if queues is not None else _NO_QUEUES)  # type: ignore[arg-type]
