"""Subject helpers as JetStream names them, on top of `jetstream_server.core.subjects`.

One implementation of NATS subject rules lives in core/subjects.py (the
broker's, `filter_matches` among them); this module only gives JetStream code
its vocabulary: `subjects_overlap` for stream/consumer subject collisions,
`is_subset` for consumer filters, `is_valid_subject` with or without wildcards.
"""

from __future__ import annotations

from jetstream_server.core.subjects import filters_overlap, is_subset_filter
from jetstream_server.core.subjects import is_valid_publish_subject as _is_valid_literal
from jetstream_server.core.subjects import is_valid_subject as _is_valid_filter

subjects_overlap = filters_overlap
is_subset = is_subset_filter


def is_valid_subject(subject: str, *, allow_wildcards: bool = True) -> bool:
    """Non-empty tokens, no whitespace; `>` only last (wildcards only if allowed)."""
    return _is_valid_filter(subject) if allow_wildcards else _is_valid_literal(subject)

