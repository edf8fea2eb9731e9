"""Subject filter matching for the stores (tiny, pure, no state).

A filter token that is exactly ``*`` matches one token; a final token that is
exactly ``>`` matches one or more tokens; any other token (including ``a*``)
is literal. ``None``, ``""`` and ``">"`` select every subject (`filter_selects`).
The token rules themselves are jetstream_server.core.subjects' (`filter_matches`,
one implementation of NATS subject rules); this module adds what the stores
need: "select everything" and normalisation.
"""

from __future__ import annotations

from collections.abc import Sequence

from jetstream_server.core.subjects import filter_matches, has_wildcard

FWC = ">"


def matches_all(filter_subject: str | None) -> bool:
    """True for the filters that select every subject."""
    return not filter_subject or filter_subject == FWC


def is_literal(filter_subject: str) -> bool:
    """True when no token is a wildcard."""
    return not has_wildcard(filter_subject)


def filter_selects(filter_subject: str | None, subject: str) -> bool:
    """Does the store filter `filter_subject` select the literal `subject`?
    None, "" and ">" select every subject; any other filter matches as a NATS
    filter (`core.subjects.filter_matches`)."""
    if filter_subject is None or matches_all(filter_subject):
        return True
    return filter_matches(filter_subject, subject)


def normalize(filters: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """A tuple of filters, or None when they select everything."""
    if filters is None:
        return None
    if isinstance(filters, str):
        filters = (filters,)
    if not filters or any(matches_all(f) for f in filters):
        return None
    return tuple(filters)
