"""Subject validation, wildcard matching and the subscription index (jetstream_server/core/subjects.py)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetstream_server.core.subjects import (
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


filter_tokens = st.sampled_from(["a", "b", "c", "*"])
filters = st.builds(
    lambda toks, tail: ".".join(toks + ([">"] if tail else [])),
    st.lists(filter_tokens, min_size=1, max_size=4),
    st.booleans(),
)
literals = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5).map(".".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(filters, min_size=1, max_size=15), st.lists(literals, min_size=1, max_size=20), st.randoms())
def test_index_agrees_with_filter_matches(fs: list[str], subjects: list[str], rnd: random.Random) -> None:
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
