"""The pieces of counters fed by sources (jetstream/counters.py): the per-origin
totals header, the increment a sourced total brings, Go's setHeader."""

from __future__ import annotations

import pytest

from jetstream_server.jetstream import counters
from jetstream_server.jetstream.errors import ApiError


def test_sourced_increment_is_the_difference_per_origin_subject() -> None:
    sources: dict[str, dict[str, str]] = {}
    assert counters.sourced_increment(sources, "A 1 a.> c.> a.x id", "c.x", b'{"val":"5"}') == 5
    assert counters.sourced_increment(sources, "A 2 a.> c.> a.x id", "c.x", b'{"val":"8"}') == 3
    assert counters.sourced_increment(sources, "B 1 > >", "c.x", b'{"val":"-1"}') == -1
    assert sources == {"A": {"a.x": "8"}, "B": {"c.x": "-1"}}  # 4 fields: the target subject
    with pytest.raises(ApiError):
        counters.sourced_increment(sources, "A 3 a.> c.> a.x", "c.x", b"not json")


def test_sources_header_round_trip_as_go_writes_it() -> None:
    sources = {"Z": {"s.<&>": "1"}, "A": {"b": "2", "a": "3"}}
    text = counters.encode_sources(sources)
    assert text == '{"A":{"a":"3","b":"2"},"Z":{"s.\\u003c\\u0026\\u003e":"1"}}'
    assert counters.parse_sources(text) == sources
    for broken in ("[", '{"A":1}', '{"A":{"a":2}}'):
        with pytest.raises(ApiError):
            counters.parse_sources(broken)


def test_set_header_replaces_in_place_or_appends() -> None:
    block = b"NATS/1.0\r\nNats-Incr: 5\r\nX: y\r\n\r\n"
    assert counters.set_header(block, "Nats-Incr", "3") == b"NATS/1.0\r\nNats-Incr: 3\r\nX: y\r\n\r\n"
    assert counters.set_header(block, "Z", "1") == b"NATS/1.0\r\nNats-Incr: 5\r\nX: y\r\nZ: 1\r\n\r\n"
