"""The cron walk of message schedules (jetstream/cron.py) on fixed times: fields,
names, steps, day-of-month / day-of-week, rollovers, daylight-saving edges
(Go's time.Date choices), zones, errors, and its bounded cost."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from jetstream_server.jetstream import cron

NS = 1_000_000_000


def _next(pattern: str, after: str, zone: str | None = None) -> str:
    """The next firing after an RFC 3339 time, formatted as nats-server does."""
    loc = cron.load_zone(zone) if zone else None
    assert zone is None or loc is not None
    start = datetime.fromisoformat(after.replace("Z", "+00:00"))
    unix = cron.next_fire(cron.parse(pattern), loc, int(start.timestamp()) * NS)
    return cron.format_rfc3339_nano(unix * NS, loc)


@pytest.mark.parametrize("pattern, after, expected", [
    ("0 0 * * * *", "2026-11-26T09:30:00Z", "2026-11-26T10:00:00Z"),
    ("0 0 * * * *", "2026-11-26T09:00:00Z", "2026-11-26T10:00:00Z"),  # strictly after
    ("* * * * * *", "2026-11-26T09:00:00Z", "2026-11-26T09:00:01Z"),
    ("*/15 * * * * *", "2026-11-26T00:00:07Z", "2026-11-26T00:00:15Z"),
    ("5/20 * * * * *", "2026-11-26T00:00:46Z", "2026-11-26T00:01:05Z"),
    ("00000000000000000000000007 * * * * *", "2026-11-26T00:00:00Z", "2026-11-26T00:00:07Z"),
    ("0 0 12 * * MON", "2026-11-26T00:00:00Z", "2026-11-30T12:00:00Z"),  # Thursday
    ("0 0 12 1 * mon", "2026-11-26T00:00:00Z", "2026-11-30T12:00:00Z"),  # 1st OR Monday
    ("0 0 12 1 * *", "2026-11-26T00:00:00Z", "2026-12-01T12:00:00Z"),  # a star: both
    ("0 0 12 ? * sat,SUN", "2026-11-26T00:00:00Z", "2026-11-28T12:00:00Z"),
    ("0 0 0 31 * *", "2026-01-31T00:00:01Z", "2026-03-31T00:00:00Z"),  # no Feb 31
    ("0 0 0 29 feb *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
    ("@yearly", "2026-11-26T00:00:00Z", "2027-01-01T00:00:00Z"),
    ("@monthly", "2026-11-26T00:00:00Z", "2026-12-01T00:00:00Z"),
    ("@weekly", "2026-11-26T00:00:00Z", "2026-11-29T00:00:00Z"),
    ("@daily", "2026-11-26T23:59:59Z", "2026-11-27T00:00:00Z"),
    ("@midnight", "2026-12-31T12:00:00Z", "2027-01-01T00:00:00Z"),
    ("@hourly", "2026-11-26T09:59:59.999Z", "2026-11-26T10:00:00Z"),
    ("0 59 23 31 12 *", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"),
])
def test_next_in_utc(pattern: str, after: str, expected: str) -> None:
    assert _next(pattern, after) == expected


@pytest.mark.parametrize("pattern, after, zone, expected", [
    ("@daily", "2026-11-26T09:30:00Z", "Europe/Amsterdam", "2026-11-27T00:00:00+01:00"),
    ("0 0 * * * *", "2026-11-26T09:30:00Z", "Asia/Kolkata", "2026-11-26T16:00:00+05:30"),
    ("0 0 0 * * *", "2026-11-26T09:30:00Z", "America/New_York", "2026-11-27T00:00:00-05:00"),
    ("@hourly", "2026-11-26T09:30:00Z", "UTC", "2026-11-26T10:00:00Z"),
    ("@hourly", "2026-11-26T09:30:00Z", "Europe/London", "2026-11-26T10:00:00Z"),  # offset 0
    # spring forward (29 March 2026, 02:00 CET -> 03:00 CEST): 02:30 does not
    # exist that day, so the walk skips to the next day, as nats-server's does
    ("0 30 2 * * *", "2026-03-28T12:00:00Z", "Europe/Amsterdam", "2026-03-30T02:30:00+02:00"),
    ("0 0 * * * *", "2026-03-29T00:30:00Z", "Europe/Amsterdam", "2026-03-29T03:00:00+02:00"),
    # fall back (25 October 2026, 03:00 CEST -> 02:00 CET): 02:30 happens twice
    # and fires twice
    ("0 30 2 * * *", "2026-10-24T12:00:00Z", "Europe/Amsterdam", "2026-10-25T02:30:00+02:00"),
    ("0 30 2 * * *", "2026-10-25T00:30:00Z", "Europe/Amsterdam", "2026-10-25T02:30:00+01:00"),
    ("0 30 2 * * *", "2026-10-25T01:30:00Z", "Europe/Amsterdam", "2026-10-26T02:30:00+01:00"),
    # a day that starts at 01:00 (Santiago, 6 September 2026 24:00 -> 01:00)
    ("@daily", "2026-09-05T12:00:00Z", "America/Santiago", "2026-09-07T00:00:00-03:00"),
])
def test_next_in_a_zone(pattern: str, after: str, zone: str, expected: str) -> None:
    assert _next(pattern, after, zone) == expected


@pytest.mark.parametrize("pattern, message", [
    ("0 0 * * *", "pattern requires 6 fields, got 5"),
    ("", "pattern requires 6 fields, got 0"),
    ("60 * * * * *", "end of range (60) above maximum (59): 60"),
    ("* * * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("* * * * * 7", "end of range (7) above maximum (6): 7"),
    ("5-1 * * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("1-2-3 * * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * * *", "too many slashes: 1/2/3"),
    ("*/0 * * * * *", "step of range should be a positive number: */0"),
    ("-1 * * * * *", "failed to parse int from : "),
    ("+-1 * * * * *", "failed to parse int from +"),
    (" 1_0 * * * * *", "failed to parse int from 1_0"),
    ("* * * * * sunday", "failed to parse int from sunday"),
    ("@hour", "pattern requires 6 fields, got 1"),
    ("9223372036854775808 * * * * *", "failed to parse int from 9223372036854775808"),
    ("9" * 5000 + " * * * * *", "failed to parse int from 999"),  # no ValueError of int()
])
def test_invalid_patterns(pattern: str, message: str) -> None:
    with pytest.raises(cron.CronError, match="^" + message.replace("(", r"\(").replace(
            ")", r"\)").replace("*", r"\*").replace("+", r"\+")):
        cron.parse(pattern)


def test_never_due_patterns_fail_in_bounded_time() -> None:
    start = time.perf_counter()
    for pattern in ("0 0 0 30 2 *", "* * * 31 4,6,9,11 *"):
        with pytest.raises(cron.CronError, match="pattern exceeds maximum range"):
            cron.next_fire(cron.parse(pattern), None, 1_800_000_000 * NS)
    # a field that selects nothing: nats-server would search five years second by second
    for pattern in (", * * * * *", "* * , * * *"):
        with pytest.raises(cron.CronError, match="pattern exceeds maximum range"):
            cron.parse(pattern)
    assert time.perf_counter() - start < 20  # a search second by second takes hours


def test_zones() -> None:
    assert cron.load_zone("UTC") is timezone.utc
    assert cron.load_zone("Local") is not None
    for bad in ("Nowhere/Special", "../etc/passwd", "/etc/localtime", "America", "utc/x"):
        assert cron.load_zone(bad) is None, bad


def test_format() -> None:
    assert cron.format_rfc3339_nano(1_800_000_000 * NS + 500_000_000, None) == \
        "2027-01-15T08:00:00.5Z"
    assert cron.format_rfc3339_nano(1_800_000_000 * NS, cron.load_zone("America/St_Johns")) == \
        "2027-01-15T04:30:00-03:30"
