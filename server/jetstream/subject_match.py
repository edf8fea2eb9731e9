"""Subject matching for JetStream: wildcard filters, overlap, validity.

NATS subjects are dot-separated tokens; `*` matches exactly one token and a
final `>` matches one or more. These helpers are pure and small on purpose:
the hot path (stream subject lookup on publish) is served by the broker's
subscription index, not by these functions.
"""

from __future__ import annotations

from functools import lru_cache


def tokens(subject: str) -> tuple[str, ...]:
    return tuple(subject.split("."))


def is_valid_subject(subject: str, *, allow_wildcards: bool = True) -> bool:
    """Non-empty tokens, no whitespace; `>` only last; wildcards only whole tokens."""
    if not subject or any(c.isspace() for c in subject):
        return False
    parts = subject.split(".")
    for i, tok in enumerate(parts):
        if not tok:
            return False
        if tok in ("*", ">"):
            if not allow_wildcards or (tok == ">" and i != len(parts) - 1):
                return False
    return True


def is_literal(subject: str) -> bool:
    return not any(tok in ("*", ">") for tok in subject.split("."))


@lru_cache(maxsize=65536)
def subject_matches(pattern: str, subject: str) -> bool:
    """True when literal `subject` matches `pattern` (which may have wildcards)."""
    if pattern == ">" or pattern == subject:
        return True
    pt = pattern.split(".")
    st = subject.split(".")
    for i, want in enumerate(pt):
        if want == ">":
            return len(st) > i
        if i >= len(st):
            return False
        if want != "*" and want != st[i]:
            return False
    return len(pt) == len(st)


def subjects_overlap(a: str, b: str) -> bool:
    """True when some literal subject matches both patterns."""
    at, bt = a.split("."), b.split(".")
    for i in range(max(len(at), len(bt))):
        x = at[i] if i < len(at) else None
        y = bt[i] if i < len(bt) else None
        if x == ">" or y == ">":
            return x is not None and y is not None
        if x is None or y is None:
            return False
        if x != y and x != "*" and y != "*":
            return False
    return True


def is_subset(sub: str, sup: str) -> bool:
    """True when every subject matched by `sub` is matched by `sup`."""
    st, pt = sub.split("."), sup.split(".")
    for i, want in enumerate(pt):
        if want == ">":
            return len(st) > i
        if i >= len(st):
            return False
        have = st[i]
        if have == ">":
            return False
        if want == "*":
            continue
        if have != want:
            return False
    return len(st) == len(pt)
