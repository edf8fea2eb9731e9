"""Permission decisions (core/permissions.py) against a reference model of nats-server's rules.

The model is written from the rules nats-server documents, not from the
implementation: a filter is turned into a regular expression (``*`` one
token, ``>`` one or more trailing tokens) and matched against the whole
subject, whose own wildcard characters are then just characters; an allow
list (when there is one) must match, a deny list must not (deny wins); a
``"subject queue"`` entry speaks about queue subscriptions in that group
only. Hypothesis draws the lists and the subjects. The integration test
`tests/server/integration/test_permissions_model.py` checks the same model against both servers.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from permission_model import (
    model_publish_allowed,
    model_subscribe_allowed,
)

from jetstream_server.core.permissions import (
    FilterSet,
    PermissionRules,
    Permissions,
    ResponsePermission,
    SubjectPermission,
    prune_oldest,
)

TOKENS = ["a", "b", "c"]
token = st.sampled_from(TOKENS)
literal = st.lists(token, min_size=1, max_size=4).map(".".join)


@st.composite
def filters(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from([*TOKENS, "*"]), min_size=1, max_size=4))
    if draw(st.booleans()):
        parts = [*parts[:-1], ">"] if draw(st.booleans()) else [*parts, ">"]
    return ".".join(parts)


queue_names = st.sampled_from(["q", "r", "q.*", "q.1"])


@st.composite
def entries(draw: st.DrawFn, with_queues: bool) -> str:
    subject = draw(filters())
    if with_queues and draw(st.integers(0, 3)) == 0:
        return f"{subject} {draw(queue_names)}"
    return subject


def lists(with_queues: bool) -> st.SearchStrategy[tuple[str, ...] | None]:
    return st.none() | st.lists(entries(with_queues), max_size=3).map(tuple)


@settings(max_examples=400, deadline=None)
@given(allow=lists(False), deny=lists(False), subject=literal)
def test_publish_matches_model(
    allow: tuple[str, ...] | None, deny: tuple[str, ...] | None, subject: str
) -> None:
    perms = Permissions(publish=SubjectPermission(allow, deny or ()))
    rules = PermissionRules.of(perms)
    assert rules.publish_allowed(subject) == model_publish_allowed(allow, deny or (), subject)


@settings(max_examples=600, deadline=None)
@given(
    allow=lists(True),
    deny=lists(True),
    subject=literal | filters(),
    queue=st.none() | st.sampled_from(["q", "r", "q.1", "q.2"]),
)
def test_subscribe_matches_model(
    allow: tuple[str, ...] | None,
    deny: tuple[str, ...] | None,
    subject: str,
    queue: str | None,
) -> None:
    perms = Permissions(subscribe=SubjectPermission(allow or None, deny or ()))
    rules = PermissionRules.of(perms)
    expected = model_subscribe_allowed(allow or (), deny or (), subject, queue)
    assert rules.subscribe_allowed(subject, queue) == expected


@given(subject=literal, filt=filters())
def test_filter_set_is_regex_matching(subject: str, filt: str) -> None:
    pattern = filt.replace(".", r"\.").replace("*", r"[^.]+").replace(">", r"[^.]+(\.[^.]+)*")
    assert FilterSet([filt]).match(subject) == bool(re.fullmatch(pattern, subject))


def test_allow_responses_turns_blanket_publish_off() -> None:
    perms = Permissions(responses=ResponsePermission())
    assert perms.publish == SubjectPermission((), ())
    assert not PermissionRules.of(perms).publish_allowed("anything")
    kept = Permissions(SubjectPermission(("a",), ("b",)), None, ResponsePermission(3, 1.0))
    assert kept.publish == SubjectPermission(("a",), ("b",))
    denied_only = Permissions(SubjectPermission(None, ("x",)), None, ResponsePermission())
    assert denied_only.publish == SubjectPermission((), ("x",))


def test_rules_are_compiled_once_per_permissions() -> None:
    a = Permissions(SubjectPermission(("x.>",)))
    b = Permissions(SubjectPermission(("x.>",)))
    assert PermissionRules.of(a) is PermissionRules.of(b)


def test_deny_collides_only_for_overlapping_wildcards() -> None:
    rules = PermissionRules.of(Permissions(subscribe=SubjectPermission(None, ("a.secret", "b.* q"))))
    assert rules.sub is not None
    assert rules.sub.deny_collides("a.*") and rules.sub.deny_collides(">")
    assert not rules.sub.deny_collides("c.*")
    assert rules.sub.deny_collides("b.x")  # the queue entry overlaps too
    assert rules.sub.delivery_denied("a.secret", None)
    assert not rules.sub.delivery_denied("b.x", None)
    assert rules.sub.delivery_denied("b.x", "q") and not rules.sub.delivery_denied("b.x", "r")


def test_prune_oldest_keeps_the_newest() -> None:
    cache = {str(i): True for i in range(10)}
    prune_oldest(cache, 4)
    assert list(cache) == [str(i) for i in range(4, 10)]
