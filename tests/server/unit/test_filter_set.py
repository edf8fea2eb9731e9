"""FilterSet (core/filter_set.py): the trie answers exactly as the pairwise checks, finds
the pair nats-server reports, and stays within its budget on hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetstream_server.core.filter_set import (
    BudgetExceeded,
    FilterSet,
    first_collision,
    first_nested,
)
from jetstream_server.core.subjects import filters_overlap, is_subset_filter

token = st.sampled_from(["a", "b", "c", "*"])
filters = st.builds(
    lambda toks, tail: ".".join(toks + ([">"] if tail else [])),
    st.lists(token, min_size=1, max_size=4),
    st.booleans(),
)


def pairwise_collision(subjects: list[str]) -> tuple[int, int] | None:
    for i, a in enumerate(subjects):
        for j in range(i + 1, len(subjects)):
            if filters_overlap(a, subjects[j]):
                return i, j
    return None


def pairwise_nested(subjects: list[str]) -> tuple[int, int] | None:
    for i, a in enumerate(subjects):
        for j, b in enumerate(subjects):
            if i != j and is_subset_filter(a, b):
                return i, j
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(filters, max_size=8), filters)
def test_trie_answers_as_the_pairwise_checks(stored: list[str], query: str) -> None:
    fs = FilterSet()
    for subject in stored:
        fs.add(subject)
    assert fs.collides(query) == any(filters_overlap(query, s) for s in stored)
    assert fs.has_superset(query, itself=False) == any(is_subset_filter(query, s) for s in stored)
    assert first_collision(stored) == pairwise_collision(stored)
    assert first_nested(stored) == pairwise_nested(stored)


def test_first_pair_in_nats_server_order() -> None:
    assert first_collision(["x.1", "a.b", "y", "a.*", "a.>"]) == (1, 3)
    assert first_nested(["a.*", "b", "a.b"]) == (2, 0)
    assert first_nested(["a.*.c", "a.b.*"]) is None  # they collide, neither holds the other
    assert first_nested(["a", "a"]) == (0, 1)


def test_three_thousand_subjects_are_fast() -> None:
    """Counted in node visits, not seconds: 20,000 visits suffice (pairwise: 9 million)."""
    subjects = [f"orders.{i}.*" for i in range(3000)] + ["events.>", "orders.7.x"]
    assert first_collision(subjects, budget=20_000) == (7, 3001)
    assert first_nested(subjects, budget=20_000) == (3001, 7)
    assert first_collision(subjects[:3000], budget=20_000) is None


def test_hostile_set_ends_within_budget() -> None:
    """`*` queries against many disjoint branches: pairwise work grows with the square
    of a 1 MB request; the budget ends the check instead."""
    subjects = [f"*.b{i}" for i in range(20000)] + [f"k{i}.a" for i in range(20000)]
    with pytest.raises(BudgetExceeded):  # ended by its count of node visits
        first_collision(subjects)


@settings(max_examples=150, deadline=None)
@given(st.lists(filters, min_size=1, max_size=12), st.data())
def test_removal_answers_as_if_never_added(stored: list[str], data: st.DataObject) -> None:
    # the engine's index of every stream's subjects lives long: streams come and go
    kept = list(stored)
    fs = FilterSet()
    for subject in stored:
        fs.add(subject)
    for subject in data.draw(st.lists(st.sampled_from(stored), unique=True)):
        assert fs.remove(subject)
        kept.remove(subject)
    assert not fs.remove("never.added")
    for query in data.draw(st.lists(filters, min_size=1, max_size=5)):
        fs.renew_budget()
        assert fs.collides(query) == any(filters_overlap(query, k) for k in kept), (kept, query)
    for subject in kept:
        fs.remove(subject)
    assert not fs._root.children  # empty branches pruned


def test_renewed_budget_per_check() -> None:
    fs = FilterSet(budget=10)
    fs.add("a.b")
    for _ in range(20):  # a long-lived set: each check has its own budget
        fs.renew_budget(10)
        assert fs.collides("a.*") and not fs.collides("b.*")
