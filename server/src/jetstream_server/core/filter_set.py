"""Overlap and subset checks over many subject filters without comparing every pair.

Stream `subjects`, consumer `filter_subjects` and the subjects of all streams
must not collide (some literal subject matches two of them) or, for consumer
filters, contain one another. Comparing every pair is quadratic: 3000 filters
are 4.5 million comparisons, a 1 MB request tens of billions, all on the
event loop. `FilterSet` keeps the filters in a token trie instead:

- `has_superset(f)` (is some other filter a superset of `f`?) follows at most
  three children per token (the same literal, ``*``, ``>``): O(tokens);
- `collides(f)` follows the same literal, ``*`` and ``>`` for a literal token
  but every child for a ``*`` token, so a crafted set can still make one query
  visit many nodes. Every query therefore draws on a shared `budget` of node
  visits; `BudgetExceeded` ends the check (the caller answers with an error)
  instead of holding the loop.

A set may live long (the engine's index of every stream's subjects): `remove`
takes a filter out again, and each check starts with `renew_budget`.

`first_collision(filters)` and `first_nested(filters)` return the pair
nats-server reports (its loops compare in list order: the first `i` that
collides with a later `j`, the first such `j`).

Invariant: a `FilterSet` answers exactly as the pairwise `filters_overlap` /
`is_subset_filter` of core/subjects.py would (property-tested against them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from jetstream_server.core.steps import Steps, drive
from jetstream_server.core.subjects import FWC, PWC, TSEP, filters_overlap, is_subset_filter

DEFAULT_BUDGET: Final = 300_000  # node visits per check: a few tenths of a second at most


class BudgetExceeded(Exception):
    """The check needed more node visits than its budget."""


class _Node:
    __slots__ = ("children", "ends")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.ends = 0  # filters ending at this node


class FilterSet:
    """A multiset of subject filters (see module docstring)."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self._root = _Node()
        self.budget = budget
        self._initial = budget

    def add(self, subject: str) -> None:
        node = self._root
        for token in subject.split(TSEP):
            child = node.children.get(token)
            if child is None:
                child = node.children[token] = _Node()
            node = child
        node.ends += 1

    def remove(self, subject: str) -> bool:
        """Take one `subject` out (pruning the nodes left empty); False when the
        set does not hold it."""
        path: list[tuple[_Node, str]] = []
        node = self._root
        for token in subject.split(TSEP):
            child = node.children.get(token)
            if child is None:
                return False
            path.append((node, token))
            node = child
        if not node.ends:
            return False
        node.ends -= 1
        for parent, token in reversed(path):
            child = parent.children[token]
            if child.ends or child.children:
                break
            del parent.children[token]
        return True

    def renew_budget(self, budget: int = DEFAULT_BUDGET) -> None:
        """A new check of a long-lived set starts with a full budget."""
        self.budget = self._initial = budget

    def _spend(self, visits: int) -> None:
        self.budget -= visits
        if self.budget < 0:
            raise BudgetExceeded(f"more than {self._initial} steps")

    def collides(self, subject: str) -> bool:
        """Does some filter in the set collide with `subject` (a literal subject
        could match both)?"""
        tokens = subject.split(TSEP)
        last = len(tokens)
        stack: list[tuple[_Node, int]] = [(self._root, 0)]
        while stack:
            node, pos = stack.pop()
            self._spend(1)
            if pos == last:
                if node.ends:
                    return True
                continue
            token = tokens[pos]
            children = node.children
            if token == FWC:
                if children:  # every child leads to a filter with one more token at least
                    return True
                continue
            if FWC in children:
                return True
            if token == PWC:
                stack.extend((child, pos + 1) for key, child in children.items())
                continue
            for key in (token, PWC):
                child = children.get(key)
                if child is not None:
                    stack.append((child, pos + 1))
        return False

    def has_superset(self, subject: str, *, itself: bool = True) -> bool:
        """Is some filter of the set a superset of `subject` (matches everything it
        matches)? With `itself`, `subject` is in the set once and does not count."""
        tokens = subject.split(TSEP)
        last = len(tokens)
        stack: list[tuple[_Node, int, bool]] = [(self._root, 0, True)]
        while stack:
            node, pos, exact = stack.pop()
            self._spend(1)
            if pos == last:
                if node.ends > (1 if exact and itself else 0):
                    return True
                continue
            token = tokens[pos]
            children = node.children
            fwc = children.get(FWC)
            if fwc is not None and fwc.ends > (1 if exact and itself and token == FWC else 0):
                return True  # `>` covers the rest: at least this one token
            if token == FWC:
                continue
            pwc = children.get(PWC)
            if pwc is not None:
                stack.append((pwc, pos + 1, exact and token == PWC))
            if token != PWC:
                child = children.get(token)
                if child is not None:
                    stack.append((child, pos + 1, exact))
        return False


def first_collision(subjects: Sequence[str], budget: int = DEFAULT_BUDGET) -> tuple[int, int] | None:
    """The first pair `(i, j)`, `i < j`, of colliding filters in list order, as
    nats-server's nested loop finds it; None when no two collide."""
    return drive(first_collision_steps(subjects, len(subjects) + 1, budget))


def first_collision_steps(
    subjects: Sequence[str], step: int, budget: int = DEFAULT_BUDGET
) -> Steps[tuple[int, int] | None]:
    """`first_collision`, `step` subjects at a time: yields between steps (a caller
    working in loop turns), returns the pair."""
    found: int | None = None
    later = FilterSet(budget)
    for i in range(len(subjects) - 1, -1, -1):
        if later.collides(subjects[i]):
            found = i
        later.add(subjects[i])
        if i and i % step == 0:
            yield
    if found is None:
        return None
    for j in range(found + 1, len(subjects)):
        if filters_overlap(subjects[found], subjects[j]):
            return found, j
    raise AssertionError("FilterSet and filters_overlap disagree")  # pragma: no cover


def first_nested(subjects: Sequence[str], budget: int = DEFAULT_BUDGET) -> tuple[int, int] | None:
    """The first pair `(i, j)`, `i != j`, where filter `i` is a subset of filter
    `j` (nats-server's consumer filter check); None when none is."""
    every = FilterSet(budget)
    for subject in subjects:
        every.add(subject)
    for i, subject in enumerate(subjects):
        if every.has_superset(subject):
            for j, other in enumerate(subjects):
                if j != i and is_subset_filter(subject, other):
                    return i, j
            raise AssertionError("FilterSet and is_subset_filter disagree")  # pragma: no cover
    return None
