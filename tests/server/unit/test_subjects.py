"""Subject validation, wildcard matching and the subscription index (jetstream_server/core/subjects.py)."""

from __future__ import annotations

import gc
import random
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetstream_server.core import subjects
from jetstream_server.core.subjects import (
    CACHE_SUBJECT_MAX,
    DEEP_TOKENS,
    SubjectIndex,
    filter_matches,
    filters_overlap,
    is_subset_filter,
    is_valid_publish_subject,
    is_valid_subject,
)

VALIDITY = [
    # subject, valid filter, valid publish subject
    ("foo", True, True),
    ("foo.bar.baz", True, True),
    ("foo.*", True, False),
    ("foo.>", True, False),
    (">", True, False),
    ("*", True, False),
    ("*.bar.>", True, False),
    ("a*b", True, True),  # contains * but is a literal token
    ("a>b.c", True, True),
    ("foo.>.bar", False, False),
    ("", False, False),
    ("foo..bar", False, False),
    (".foo", False, False),
    ("foo.", False, False),
    (".", False, False),
    ("foo bar", False, False),
    ("foo\tbar", False, False),
    ("foo\r\n", False, False),
    ("$JS.API.STREAM.INFO.ORDERS", True, True),
    ("ünïcode.subject", True, True),
]


@pytest.mark.parametrize(("subject", "filter_ok", "publish_ok"), VALIDITY)
def test_validity(subject: str, filter_ok: bool, publish_ok: bool) -> None:
    assert is_valid_subject(subject) is filter_ok
    assert is_valid_publish_subject(subject) is publish_ok


MATCHES = [
    ("foo", "foo", True),
    ("foo", "bar", False),
    ("foo", "foo.bar", False),
    ("foo.*", "foo.bar", True),
    ("foo.*", "foo", False),
    ("foo.*", "foo.bar.baz", False),
    ("foo.>", "foo.bar", True),
    ("foo.>", "foo.bar.baz", True),
    ("foo.>", "foo", False),
    (">", "foo", True),
    (">", "foo.bar", True),
    ("*", "foo", True),
    ("*", "foo.bar", False),
    ("*.bar", "foo.bar", True),
    ("*.*.baz", "a.b.baz", True),
    ("*.*.baz", "a.b.bat", False),
    ("a*b", "a*b", True),
    ("a*b", "axb", False),
    ("foo.*.>", "foo.bar", False),
    ("foo.*.>", "foo.bar.baz", True),
]


@pytest.mark.parametrize(("filter_subject", "subject", "expected"), MATCHES)
def test_matching(filter_subject: str, subject: str, expected: bool) -> None:
    assert filter_matches(filter_subject, subject) is expected
    index: SubjectIndex[str] = SubjectIndex()
    index.insert(filter_subject, "sub")
    assert bool(index.match(subject)) is expected


@pytest.mark.parametrize(
    ("a", "b", "overlap", "a_in_b"),
    [
        ("foo.*", "foo.bar", True, False),
        ("foo.bar", "foo.*", True, True),
        ("foo.>", "foo.*.baz", True, False),
        ("foo.*.baz", "foo.>", True, True),
        ("foo.*", "bar.*", False, False),
        ("foo", "foo.>", False, False),
        (">", "a.b", True, False),
        ("a.b", ">", True, True),
    ],
)
def test_overlap_and_subset(a: str, b: str, overlap: bool, a_in_b: bool) -> None:
    assert filters_overlap(a, b) is overlap
    assert filters_overlap(b, a) is overlap
    assert is_subset_filter(a, b) is a_in_b


def test_index_queue_groups_and_removal() -> None:
    index: SubjectIndex[str] = SubjectIndex()
    index.insert("jobs.*", "plain")
    index.insert("jobs.>", "w1", queue="workers")
    index.insert("jobs.new", "w2", queue="workers")
    index.insert("jobs.new", "a1", queue="auditors")
    result = index.match("jobs.new")
    assert result.plain == ["plain"]
    assert sorted(result.queues["workers"]) == ["w1", "w2"]
    assert result.queues["auditors"] == ["a1"]
    assert len(index) == 4
    assert index.remove("jobs.new", "w2", queue="workers")
    assert not index.remove("jobs.new", "w2", queue="workers")
    assert index.match("jobs.new").queues["workers"] == ["w1"]
    index.remove("jobs.>", "w1", queue="workers")
    index.remove("jobs.new", "a1", queue="auditors")
    index.remove("jobs.*", "plain")
    assert not index.match("jobs.new")
    assert len(index) == 0
    assert list(index.values()) == []


def test_cache_is_invalidated_by_inserts_and_removes() -> None:
    index: SubjectIndex[str] = SubjectIndex()
    assert not index.match("a.b.c")  # cached as empty
    index.insert("a.>", "x")
    assert index.match("a.b.c").plain == ["x"]
    index.insert("a.b.c", "y")
    assert index.match("a.b.c").plain == ["x", "y"]
    index.remove("a.>", "x")
    assert index.match("a.b.c").plain == ["y"]


def test_subjects_differing_in_an_ignored_last_token_share_a_result() -> None:
    # reply inboxes: a new subject per request under one `*` subscription
    index: SubjectIndex[str] = SubjectIndex()
    index.insert("_INBOX.abc.*", "inbox")
    index.insert("_INBOX.>", "all")
    for n in range(5):
        assert index.match(f"_INBOX.abc.{n}").plain == ["all", "inbox"]
    assert not index._cache  # served by head, the per-subject cache is left alone
    assert index.match("_INBOX.abc.").plain == ["all", "inbox"]
    # a literal at the last level makes the last token matter again
    index.insert("_INBOX.abc.7", "seven")
    assert sorted(index.match("_INBOX.abc.7").plain) == ["all", "inbox", "seven"]
    assert index.match("_INBOX.abc.8").plain == ["all", "inbox"]
    index.remove("_INBOX.abc.7", "seven")
    index.remove("_INBOX.abc.*", "inbox")
    assert index.match("_INBOX.abc.7").plain == ["all"]
    assert index.match("_INBOX.abc.9").plain == ["all"]
    assert index.match("_INBOX.abc.9.x").plain == ["all"]
    assert not index.match("_INBOX")


def test_subjects_differing_past_the_literal_part_share_a_result() -> None:
    # ack subjects: a new 9-token subject per message under `$JS.ACK.>`
    index: SubjectIndex[str] = SubjectIndex()
    index.insert("$JS.ACK.>", "acks")
    index.insert("$JS.API.>", "api")
    index.insert("$JS.*.S.*.1.>", "some")
    for n in range(5):
        assert index.match(f"$JS.ACK.S.P.1.{n}.{n}.99.0").plain == ["acks", "some"]
        assert index.match(f"$JS.ACK.T.P.1.{n}.{n}.99.0").plain == ["acks"]
    assert not index._cache
    assert index.match("$JS.ACK.S").plain == ["acks"]
    assert index.match("$JS.ACK").plain == []
    assert index.match("$JS.API.S.P.1.5").plain == ["api", "some"]
    index.insert("$JS.ACK.S.P.1.7.7.99.0", "seven")
    assert sorted(index.match("$JS.ACK.S.P.1.7.7.99.0").plain) == ["acks", "seven", "some"]
    assert index.match("$JS.ACK.S.P.1.8.8.99.0").plain == ["acks", "some"]
    index.remove("$JS.ACK.>", "acks")
    assert index.match("$JS.ACK.S.P.1.8.8.99.0").plain == ["some"]


def test_cache_is_bounded() -> None:
    index: SubjectIndex[str] = SubjectIndex(cache_max=100)
    index.insert(">", "all")
    for i in range(1000):
        assert index.match(f"s.{i}").plain == ["all"]
    assert len(index._cache) <= 100


filter_tokens = st.sampled_from(["a", "b", "c", "*", "**", "a*"])
filters = st.builds(
    lambda toks, tail: ".".join(toks + ([">"] if tail else [])),
    st.lists(filter_tokens, min_size=1, max_size=4),
    st.booleans(),
)
literals = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5).map(".".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(filters, min_size=1, max_size=15), st.lists(literals, min_size=1, max_size=20), st.randoms())
def test_index_agrees_with_filter_matches(fs: list[str], subjects: list[str], rnd: random.Random) -> None:
    check_index_agrees(fs, subjects, rnd)


def check_index_agrees(fs: list[str], subjects: list[str], rnd: random.Random) -> SubjectIndex[int]:
    """Insert `fs`, remove half, and compare every match with `filter_matches`."""
    index: SubjectIndex[int] = SubjectIndex()
    live: dict[int, str] = {}
    for i, f in enumerate(fs):
        index.insert(f, i)
        live[i] = f
        for s in subjects[:3]:
            index.match(s)  # warm the cache between changes
    for i in rnd.sample(sorted(live), k=len(live) // 2):
        index.remove(live.pop(i), i)
    for s in subjects:
        expected = sorted(i for i, f in live.items() if filter_matches(f, s))
        assert sorted(index.match(s).plain) == expected
    return index


def test_long_subjects_validate_without_a_loop_per_character() -> None:
    long = ".".join("a" * 7 for _ in range(100_000))
    assert is_valid_subject(long) and is_valid_publish_subject(long)
    assert not is_valid_subject(long + ". x") and not is_valid_subject(long + "..a")
    assert is_valid_subject(long + ".*.>") and not is_valid_publish_subject(long + ".*")
    assert not is_valid_subject(">." + long) and not is_valid_subject(long + ".>.a")


def test_literal_filters_take_no_trie_nodes() -> None:
    index: SubjectIndex[str] = SubjectIndex()
    long = ".".join(str(i) for i in range(100_000))
    index.insert(long, "a")
    index.insert("x.y", "b", queue="q")
    assert index._root.empty()  # laziness: a literal filter is one dict entry
    assert index.match(long).plain == ["a"] and index.match("x.y").queues == {"q": ["b"]}
    index.insert("x.*", "c")
    assert index.match("x.y").plain == ["c"] and index.match("x.y").queues == {"q": ["b"]}
    assert index.remove(long, "a") and not index.match(long)
    assert sorted(index.values()) == ["b", "c"] and len(index) == 2


def test_deep_wildcard_filters_take_no_trie_nodes() -> None:
    # 512k tokens, as a raised max_control_line allows: kept whole, not a node per token
    index: SubjectIndex[str] = SubjectIndex()
    all_stars = ".".join(["*"] * 500_000) + ".>"
    mixed = ".".join(["*", "k"] * 100_000)
    index.insert(all_stars, "stars")
    index.insert(mixed, "mixed", queue="q")
    index.insert("a.*", "shallow")
    assert index.deep_filters == 2 and len(index) == 3
    assert index._deep[all_stars].pick is None  # only wildcards: matched by count, never split
    assert index._root.pwc is None and index._root.children is not None
    assert list(index._root.children) == ["a"]  # the trie holds the shallow filter alone
    deep_subject = ".".join(["k"] * 500_001)
    assert index.match(deep_subject).plain == ["stars"]
    assert index.match(".".join(["k"] * 200_000)).queues == {"q": ["mixed"]}
    assert not index.match(".".join(["k"] * 199_999) + ".x")  # a literal token differs
    assert not index.match(".".join(["k"] * 500_000))  # `>` needs one more token
    assert index.match("a.b").plain == ["shallow"]
    assert sorted(index.values()) == ["mixed", "shallow", "stars"]
    assert index.remove(all_stars, "stars") and not index.remove(all_stars, "stars")
    assert index.remove(mixed, "mixed", queue="q") and index.deep_filters == 0
    assert not index._deep_exact and not index._deep_fwc
    assert not index.match(deep_subject) and len(index) == 1


def test_the_trie_is_never_deeper_than_deep_tokens() -> None:
    index: SubjectIndex[str] = SubjectIndex()
    at_limit = ".".join(["*"] * DEEP_TOKENS)
    index.insert(at_limit, "trie")
    index.insert(at_limit + ".x", "deep")
    assert index.deep_filters == 1
    depth, node = 0, index._root
    while node.pwc is not None:
        node, depth = node.pwc, depth + 1
    assert depth == DEEP_TOKENS and not (node.children or node.fwc or node.pwc)
    assert index.match(".".join(["a"] * DEEP_TOKENS)).plain == ["trie"]
    assert index.match(".".join(["a"] * DEEP_TOKENS) + ".x").plain == ["deep"]


def test_deep_results_are_dropped_from_the_cache_when_a_deep_filter_changes() -> None:
    index: SubjectIndex[str] = SubjectIndex()
    deep_subject = ".".join(["t"] * (DEEP_TOKENS + 1))
    index.insert(">", "all")
    assert index.match(deep_subject).plain == ["all"]  # cached before any deep filter
    index.insert("x.y", "other")
    index.insert(".".join(["*"] * (DEEP_TOKENS + 1)), "deep")
    assert index.match(deep_subject).plain == ["all", "deep"]
    index.remove(".".join(["*"] * (DEEP_TOKENS + 1)), "deep")
    assert index.match(deep_subject).plain == ["all"]


def test_subjects_longer_than_the_cache_limit_are_not_cached() -> None:
    index: SubjectIndex[str] = SubjectIndex()
    index.insert("_INBOX.*.*", "inbox")
    index.insert(">", "all")
    long = "_INBOX." + "x" * CACHE_SUBJECT_MAX + ".1"
    assert index.match(long).plain == ["all", "inbox"]
    assert not index._cache and not index._heads and not index._prefixes


@settings(max_examples=150, deadline=None)
@given(st.lists(filters, min_size=1, max_size=15), st.lists(literals, min_size=1, max_size=20), st.randoms())
def test_deep_filters_agree_with_filter_matches(fs: list[str], subjects_: list[str], rnd: random.Random) -> None:
    # with the deep limit at 2 tokens, most random filters are deep ones
    with mock.patch.object(subjects, "DEEP_TOKENS", 2):
        deep = [f for f in fs if f.count(".") >= 2 and ("*" in f.split(".") or f.endswith(">"))]
        index = check_index_agrees(fs, subjects_, rnd)
        assert index.deep_filters <= len(set(deep))
        assert not any(f.count(".") >= 2 for f in _trie_filters(index))


def _trie_filters(index: SubjectIndex[int]) -> list[str]:
    """The filters the trie holds, rebuilt from its nodes."""
    out, stack = [], [(index._root, "")]
    while stack:
        node, path = stack.pop()
        if node.plain or node.queues:
            out.append(path)
        kids = dict(node.children or {})
        if node.pwc is not None:
            kids["*"] = node.pwc
        if node.fwc is not None:
            kids[">"] = node.fwc
        stack.extend((child, f"{path}.{tok}" if path else tok) for tok, child in kids.items())
    return out


def test_a_plain_literal_subscription_adds_no_object_for_the_collector() -> None:
    # a full collection walks every tracked object: 200,000 subscriptions on one
    # connection must not bring 400,000 index objects besides themselves
    index: SubjectIndex[int] = SubjectIndex()
    gc.collect()
    before = len(gc.get_objects())
    for i in range(10_000):
        index.insert(f"storm.{i}.x", i)
    gc.collect()
    assert len(gc.get_objects()) - before < 100
    index.insert("storm.1.x", -1)  # a second value, a queue member: then a node
    index.insert("storm.2.x", -2, queue="q")
    assert sorted(index.match("storm.1.x").plain) == [-1, 1]
    assert index.match("storm.2.x").plain == [2] and index.match("storm.2.x").queues == {"q": [-2]}
    assert index.match("storm.3.x").plain == [3]
    assert index.remove("storm.1.x", 1) and index.match("storm.1.x").plain == [-1]
    assert not index.remove("storm.3.x", 3, queue="q") and index.remove("storm.3.x", 3)
    assert not index.match("storm.3.x") and len(index) == 10_000
