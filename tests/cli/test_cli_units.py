"""jetstream_cli.units: natscli's duration and size syntax, and its number, size, duration
and time formatting."""

from __future__ import annotations

import pytest

from jetstream_cli.units import (
    GoTime,
    comma,
    go_duration,
    human_duration,
    ibytes,
    parse_bytes,
    parse_duration,
)

S = 1_000_000_000


@pytest.mark.parametrize(("text", "nanos"), [
    ("24h", 24 * 3600 * S), ("1h30m", 5400 * S), ("500ms", S // 2), ("2d", 48 * 3600 * S),
    ("1w", 7 * 24 * 3600 * S), ("1M", 30 * 24 * 3600 * S), ("1y", 365 * 24 * 3600 * S),
    ("1.5s", 3 * S // 2), ("0", 0), ("-1s", -S), ("10us", 10_000), ("3ns", 3),
])
def test_parse_duration(text: str, nanos: int) -> None:
    assert parse_duration(text) == nanos


@pytest.mark.parametrize("text", ["24", "24x", "h", "", "1h x", "-", "1hh"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(("text", "size"), [
    ("1024", 1024), ("10MB", 10 << 20), ("1GiB", 1 << 30), ("2k", 2048), ("5B", 5),
    ("-1", -1), ("-5MB", -1), ("0", 0),
])
def test_parse_bytes(text: str, size: int) -> None:
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["10XB", "MB", "1.5MB", "ten"])
def test_parse_bytes_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid bytes specification"):
        parse_bytes(text)


@pytest.mark.parametrize(("size", "text"), [
    (0, "0 B"), (9, "9 B"), (104, "104 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (10 * 1024, "10 KiB"), (256 << 20, "256 MiB"), (3 << 30, "3.0 GiB"),
])
def test_ibytes(size: int, text: str) -> None:
    assert ibytes(size) == text


@pytest.mark.parametrize(("nanos", "text"), [
    (0, "0s"), (1500, "1.5µs"), (300 * 1_000_000, "300ms"), (3 * S // 2, "1.5s"),
    (120 * S, "2m0s"), (3600 * S, "1h0m0s"), (90061 * S, "25h1m1s"), (-S, "-1s"),
])
def test_go_duration(nanos: int, text: str) -> None:
    assert go_duration(nanos) == text


@pytest.mark.parametrize(("nanos", "text"), [
    (3_010_000_000, "3.01s"), (755_400_000, "755ms"), (120 * S, "2m0s"),
    (24 * 3600 * S, "1d0h0m0s"), (400 * 24 * 3600 * S, "1y35d0h0m0s"), (2**63 - 1, "never"),
    (30 * S, "30.00s"), (1234, "1µs"),
])
def test_human_duration(nanos: int, text: str) -> None:
    assert human_duration(nanos) == text


def test_comma() -> None:
    assert comma(1234567) == "1,234,567"
    assert comma(0) == "0"
    assert comma(-1) == "-1"


def test_go_time() -> None:
    moment = GoTime.parse("2024-05-01T10:00:00.123456789Z")
    assert moment.nanos == 123456789
    assert moment.go_string() == "2024-05-01 10:00:00.123456789 +0000 UTC"
    assert moment.unix_nanos() == 1714557600_123456789
    assert not moment.is_zero
    assert GoTime.parse("0001-01-01T00:00:00Z").is_zero
    assert GoTime.parse("0001-01-01T00:00:00Z").since(0) == 2**63 - 1
    assert GoTime.parse("2024-05-01T12:00:00+02:00").utc.hour == 10
    with pytest.raises(ValueError):
        GoTime.parse("yesterday")
