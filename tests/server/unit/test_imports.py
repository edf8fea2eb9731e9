"""core/imports.py: subject mapping, and the bounds of the links between two brokers."""

from __future__ import annotations

import itertools

import pytest

from jetstream_server.core import imports
from jetstream_server.core.imports import ServiceLink, StreamLink, map_subject
from jetstream_server.core.routing import Broker


def test_map_subject_carries_wildcard_tokens() -> None:
    assert map_subject("news.1", "news.>", "a.news.>") == "a.news.1"
    assert map_subject("ask.a.x.y", "ask.a.>", "help.>") == "help.x.y"
    assert map_subject("o.7.new", "o.*.new", "orders.*.created") == "orders.7.created"
    assert map_subject("same", "same", "same") == "same"


def test_two_accounts_importing_each_other_do_not_loop() -> None:
    a, b = Broker(), Broker()
    got: list[str] = []
    a.subscribe("x", lambda s, r, h, p: got.append("a"))
    b.subscribe("x", lambda s, r, h, p: got.append("b"))
    for link in (StreamLink(a, b, "x", "x"), StreamLink(b, a, "x", "x")):
        link.start()
    a.publish("x", None, None, b"")
    assert sorted(got) == ["a", "a", "b"]  # A's own, B's import, A's again from B: then stop


def test_service_link_answers_once_and_bounds_unanswered_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    exporter, importer = Broker(), Broker()
    clock = itertools.count(0, 10**9)
    link = ServiceLink(exporter, importer, "svc", "svc", lambda: next(clock), threshold_ns=5 * 10**9)
    link.start()
    answers: list[bytes] = []
    importer.subscribe("inbox.1", lambda s, r, h, p: answers.append(p))
    replies: list[str] = []
    exporter.subscribe("svc", lambda s, r, h, p: replies.append(r or ""))
    importer.publish("svc", "inbox.1", None, b"q")
    exporter.publish(replies[0], None, None, b"one")
    exporter.publish(replies[0], None, None, b"two")  # singleton: only the first goes back
    assert answers == [b"one"] and link.pending == 0
    # unanswered requests expire after the threshold and never exceed the cap
    imports.MAX_PENDING_RESPONSES = 3
    try:
        for _ in range(10):
            importer.publish("svc", "inbox.1", None, b"q")
        assert link.pending <= 3
    finally:
        imports.MAX_PENDING_RESPONSES = 10000
    assert exporter.num_subscriptions <= 1 + 3
