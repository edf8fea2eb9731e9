"""Subject filter matching for the stores (tiny, pure, no state).

A filter token that is exactly ``*`` matches one token; a final token that is
exactly ``>`` matches one or more tokens; any other token (including ``a*``)
is literal. ``None``, ``""`` and ``">"`` match every subject. Kept local to
the store package so storage has no dependency on the broker's subject index.
"""

from __future__ import annotations

from collections.abc import Sequence

PWC = "*"
FWC = ">"


def matches_all(filter_subject: str | None) -> bool:
    """True for the filters that select every subject."""
    return not filter_subject or filter_subject == FWC


def is_literal(filter_subject: str) -> bool:
    """True when no token is a wildcard."""
    if PWC not in filter_subject and FWC not in filter_subject:
        return True
    return all(tok != PWC and tok != FWC for tok in filter_subject.split("."))


def subject_matches(filter_subject: str, subject: str) -> bool:
    """Does the literal `subject` match `filter_subject`?"""
    if filter_subject == subject or matches_all(filter_subject):
        return True
    if PWC not in filter_subject and FWC not in filter_subject:
        return False
    ftoks = filter_subject.split(".")
    stoks = subject.split(".")
    last = len(ftoks) - 1
    for i, ftok in enumerate(ftoks):
        if ftok == FWC and i == last:
            return len(stoks) > i
        if i >= len(stoks):
            return False
        if ftok != PWC and ftok != stoks[i]:
            return False
    return len(stoks) == len(ftoks)


def normalize(filters: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """A tuple of filters, or None when they select everything."""
    if filters is None:
        return None
    if isinstance(filters, str):
        filters = (filters,)
    if not filters or any(matches_all(f) for f in filters):
        return None
    return tuple(filters)
