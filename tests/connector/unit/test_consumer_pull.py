"""The wire half of option consumer (read/consumer_pull.py): ack subjects (no server; pulls and acks
run against both servers in tests/connector/integration/test_consumer_feed.py)."""

from __future__ import annotations

import pytest

from spark_jetstream.client import NatsError
from spark_jetstream.read.consumer_pull import Delivered, parse_ack_reply


def test_ack_subjects_of_both_layouts() -> None:
    assert parse_ack_reply(b"$JS.ACK.S.C.2.17.5.1700000000000000000.3") == (2, 17, 1700000000000000000)
    assert parse_ack_reply(b"$JS.ACK.hub.ACCHASH.S.C.1.9.9.42.0") == (1, 9, 42)
    assert parse_ack_reply(b"$JS.ACK.hub.ACCHASH.S.C.1.9.9.42.0.rand") == (1, 9, 42)
    for bad in (b"$JS.ACK.S.C.1.2", b"$JS.ACK.a.b.c.d.e.f.g.h.i.j"):
        with pytest.raises(NatsError, match="not an ack subject"):
            parse_ack_reply(bad)


def test_a_message_size_counts_subject_headers_and_payload() -> None:
    assert Delivered(1, 1, b"a.b", b"NATS/1.0\r\n\r\n", b"xyz", 0, b"r").size == 3 + 12 + 3
