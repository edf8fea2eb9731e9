"""Subject helpers as JetStream names them, on top of `jetstream_server.core.subjects`.

One implementation of NATS subject rules lives in core/subjects.py (the
broker's); this module only gives JetStream code its vocabulary
(`subjects_overlap` for stream/consumer subject collisions, `is_subset` for
consumer filters) and memoises `subject_matches`, which the stream API calls
with the same few filters over and over.
"""

from __future__ import annotations

from functools import lru_cache

from jetstream_server.core.subjects import filters_overlap, is_subset_filter
from jetstream_server.core.subjects import is_valid_publish_subject as _is_valid_literal
from jetstream_server.core.subjects import is_valid_subject as _is_valid_filter
from jetstream_server.core.subjects import subject_matches as _subject_matches

subjects_overlap = filters_overlap
is_subset = is_subset_filter


def is_valid_subject(subject: str, *, allow_wildcards: bool = True) -> bool:
    """Non-empty tokens, no whitespace; `>` only last (wildcards only if allowed)."""
    return _is_valid_filter(subject) if allow_wildcards else _is_valid_literal(subject)


@lru_cache(maxsize=65536)
def subject_matches(pattern: str, subject: str) -> bool:
    """True when literal `subject` matches `pattern` (which may have wildcards)."""
    return _subject_matches(pattern, subject)
