"""Counter arithmetic and checks (jetstream/counters.py)."""

from __future__ import annotations

import pytest

from jetstream_server.core.headers import parse_headers
from jetstream_server.jetstream.counters import check_incr, current_total, total_payload
from jetstream_server.jetstream.errors import ApiError


@pytest.mark.parametrize("stored", [b"not json", b"[1]", b'{"val": 5}'])
def test_a_broken_previous_value(stored: bytes) -> None:
    with pytest.raises(ApiError) as broken:
        current_total(stored)
    assert broken.value.to_json()["err_code"] == 10172


def test_totals() -> None:
    assert current_total(None) == 0
    assert current_total(total_payload(-(10**40))) == -(10**40)
    assert current_total(b'{"val":"junk"}') == 0  # as Go's big.Int.SetString failing
    hdr = parse_headers(b"NATS/1.0\r\nNats-Incr: -007\r\n\r\n")
    assert check_incr(hdr, b"", True) == -7
    assert check_incr(parse_headers(b"NATS/1.0\r\nNats-Incr:\r\n\r\n"), b"", True) is None
