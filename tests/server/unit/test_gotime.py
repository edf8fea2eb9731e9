"""Go's durations and RFC 3339 times (core/gotime.py), and what each caller keeps.

The duration tables are Go's own (time_test.go: parseDurationTests,
parseDurationErrorTests, durationTests); the RFC 3339 rejections are what
nats-server answered when a consumer was created with that `opt_start_time`.
The last section pins the rules each caller adds around the shared parser
(bare seconds and no sign in a config file, ``never`` for a message TTL, at
least a second for ``@every``), which differed between the copies this
module replaced.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetstream_server.config import ConfigError, ServerConfig, parse_duration
from jetstream_server.core.gotime import (
    MAX_DURATION_NS,
    ZERO_TIME,
    DurationError,
    format_duration,
    parse_duration_ns,
    parse_rfc3339_ns,
    rfc3339_ns,
)
from jetstream_server.jetstream.errors import ApiError
from jetstream_server.jetstream.schedules import next_due
from jetstream_server.jetstream.stream import parse_ttl_ns
from jetstream_server.jetstream.stream_config import ServerLimits, StreamConfig

NS = 1_000_000_000
US = 1_000
MS = 1_000_000
MINUTE = 60 * NS
HOUR = 60 * MINUTE


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("5s", 5 * NS),
        ("30s", 30 * NS),
        ("1478s", 1478 * NS),
        ("-5s", -5 * NS),
        ("+5s", 5 * NS),
        ("-0", 0),
        ("+0", 0),
        ("5.0s", 5 * NS),
        ("5.6s", 5 * NS + 600 * MS),
        ("5.s", 5 * NS),
        (".5s", 500 * MS),
        ("1.0s", NS),
        ("1.00s", NS),
        ("1.004s", NS + 4 * MS),
        ("1.0040s", NS + 4 * MS),
        ("100.00100s", 100 * NS + MS),
        ("10ns", 10),
        ("11us", 11 * US),
        ("12\u00b5s", 12 * US),  # the micro sign
        ("12\u03bcs", 12 * US),  # the Greek mu
        ("13ms", 13 * MS),
        ("14s", 14 * NS),
        ("15m", 15 * MINUTE),
        ("16h", 16 * HOUR),
        ("3h30m", 3 * HOUR + 30 * MINUTE),
        ("10.5s4m", 4 * MINUTE + 10 * NS + 500 * MS),
        ("-2m3.4s", -(2 * MINUTE + 3 * NS + 400 * MS)),
        ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * NS + 4 * MS + 5 * US + 6),
        ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * NS + 425 * MS),
        ("52763797000ns", 52763797000),
        ("0.3333333333333333333h", 20 * MINUTE),
        ("9007199254740993ns", (1 << 53) + 1),
        ("9223372036854775807ns", MAX_DURATION_NS),
        ("9223372036854775.807us", MAX_DURATION_NS),
        ("9223372036s854ms775us807ns", MAX_DURATION_NS),
        ("-9223372036854775808ns", -(1 << 63)),
        ("-9223372036854775.808us", -(1 << 63)),
        ("-9223372036s854ms775us808ns", -(1 << 63)),
        ("-2562047h47m16.854775808s", -(1 << 63)),
        ("0.100000000000000000000h", 6 * MINUTE),
        ("0.830103483285477580700h", 49 * MINUTE + 48 * NS + 372539827),
        ("4.35s", 4350 * MS),  # a float sum of 4.35 * 1e9 would give ...999
        ("000000000000000000000001s", NS),
    ],
)
def test_parse_duration_as_go(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("3", 'time: missing unit in duration "3"'),
        ("-", 'time: invalid duration "-"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1s ", 'time: unknown unit "s " in duration "1s "'),
        ("\u00ffff", 'time: invalid duration "\\xc3\\xbfff"'),
        ("hello \u00ffff world", 'time: invalid duration "hello \\xc3\\xbfff world"'),
        ('1"s', 'time: unknown unit "\\"s" in duration "1\\"s"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
        ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
        ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ],
)
def test_parse_duration_errors_as_go(text: str, message: str) -> None:
    with pytest.raises(DurationError) as err:
        parse_duration_ns(text)
    assert str(err.value) == message


def test_a_huge_duration_is_refused_cheaply() -> None:
    with pytest.raises(DurationError):
        parse_duration_ns("9" * 100_000 + "s")


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1100, "1.1\u00b5s"),
        (2200 * US, "2.2ms"),
        (3300 * MS, "3.3s"),
        (4 * MINUTE + 5 * NS, "4m5s"),
        (4 * MINUTE + 5001 * MS, "4m5.001s"),
        (5 * HOUR + 6 * MINUTE + 7001 * MS, "5h6m7.001s"),
        (8 * MINUTE + 1, "8m0.000000001s"),
        (MAX_DURATION_NS, "2562047h47m16.854775807s"),
        (-(1 << 63), "-2562047h47m16.854775808s"),
        (60 * NS, "1m0s"),
        (HOUR, "1h0m0s"),
        (-5 * NS, "-5s"),
        (120 * NS, "2m0s"),
    ],
)
def test_format_duration_as_go(ns: int, text: str) -> None:
    assert format_duration(ns) == text


@given(st.integers(min_value=-(1 << 63), max_value=MAX_DURATION_NS))
def test_a_formatted_duration_parses_back(ns: int) -> None:
    assert parse_duration_ns(format_duration(ns)) == ns


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("0001-01-01T00:00:00Z", 0),  # Go's zero time: JetStream's "no time"
        ("2024-01-01T00:00:00Z", 1_704_067_200 * NS),
        ("2024-01-01T00:00:00.5Z", 1_704_067_200 * NS + 500 * MS),
        ("2024-01-01T00:00:00,5Z", 1_704_067_200 * NS + 500 * MS),
        ("2024-01-01T00:00:00.1234567891Z", 1_704_067_200 * NS + 123456789),
        ("2024-01-01T01:00:00+01:00", 1_704_067_200 * NS),
        ("2023-12-31T23:30:00-00:30", 1_704_067_200 * NS),
        ("2024-02-29T12:00:00Z", 1_709_208_000 * NS),
        ("1969-12-31T23:59:59.5Z", -500 * MS),
        ("0000-01-01T00:00:00Z", -62_167_219_200 * NS),
    ],
)
def test_parse_rfc3339(text: str, ns: int) -> None:
    assert parse_rfc3339_ns(text) == ns


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-01t00:00:00z",  # nats-server: cannot parse "t00:00:00z" as "T"
        "2024-01-01 00:00:00Z",
        " 2024-01-01T00:00:00Z",
        "2024-02-31T00:00:00Z",  # day out of range
        "2023-02-29T00:00:00Z",
        "2024-13-01T00:00:00Z",
        "2024-01-01T25:00:00Z",  # hour out of range
        "2024-01-01T00:60:00Z",
        "2024-01-01T00:00:60Z",
        "2024-01-01T00:00:00+24:00",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:00.Z",
        "2024-01-01",
        "\u0662\u0660\u0662\u0664-01-01T00:00:00Z",  # digits, but not ASCII ones
        "",
    ],
)
def test_parse_rfc3339_refuses_what_go_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        parse_rfc3339_ns(text)


def test_format_rfc3339() -> None:
    assert rfc3339_ns(0) == rfc3339_ns(-5) == ZERO_TIME
    assert rfc3339_ns(1_704_067_200 * NS) == "2024-01-01T00:00:00Z"
    assert rfc3339_ns(1_704_067_200 * NS + 120 * MS) == "2024-01-01T00:00:00.12Z"
    assert rfc3339_ns(1_704_067_200 * NS + 1) == "2024-01-01T00:00:00.000000001Z"
    assert rfc3339_ns(1_704_067_200 * NS, fixed_fraction=True) == "2024-01-01T00:00:00.000000000Z"
    for ns in (1, 1_704_067_200 * NS + 120 * MS, 1_704_067_200 * NS + 7):
        assert parse_rfc3339_ns(rfc3339_ns(ns)) == ns


# -- what each caller keeps around the shared parsers -----------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (30, 30.0),  # numbers are seconds (nats-server's older form)
        (1.5, 1.5),
        ("45", 45.0),  # so are bare numeric strings, here
        ("2.5", 2.5),
        (" 10s ", 10.0),
        ("1h30m", 5400.0),
        ("1.5ms", 0.0015),
        (".5s", 0.5),  # Go's forms
        ("0", 0.0),
    ],
)
def test_config_durations(value: object, seconds: float) -> None:
    assert parse_duration(value, "ping_interval") == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["-1s", "+1s", "1d", "soon", "", True, None])
def test_config_durations_take_no_sign(value: object) -> None:
    with pytest.raises(ConfigError, match="ping_interval: expected a duration"):
        parse_duration(value, "ping_interval")


def test_config_messages_print_durations_as_go() -> None:
    with pytest.raises(ConfigError) as err:
        ServerConfig(lame_duck_duration_s=30, lame_duck_grace_period_s=90.5).validate()
    assert str(err.value) == (
        "lame duck grace period (1m30.5s) should be strictly lower than lame duck duration (30s)"
    )


@pytest.mark.parametrize(
    ("value", "ns"),
    [("never", -1), ("5", 5 * NS), ("1s", NS), ("1m30s", 90 * NS), ("+2s", 2 * NS),
     (" 3s ", 3 * NS)],
)
def test_message_ttl(value: str, ns: int) -> None:
    assert parse_ttl_ns(value) == ns


@pytest.mark.parametrize("value", ["0", "500ms", "-5s", "0s", "1d", "", "Never"])
def test_message_ttl_refused(value: str) -> None:
    with pytest.raises(ApiError):
        parse_ttl_ns(value)


def test_schedule_patterns() -> None:
    now = 1_800_000_000 * NS
    assert next_due("@every 1s", now, now) == (now + NS, True)
    assert next_due("@every +2s", now, now) == (now + 2 * NS, True)
    assert next_due("@every 500ms", now, now) is None  # at least a second
    assert next_due("@every -5s", now, now) is None
    assert next_due("@every 5", now, now) is None
    assert next_due("@at 2027-01-15T08:00:00Z", now, now) == (1_800_000_000 * NS, False)
    assert next_due("@at 2027-01-15t08:00:00z", now, now) is None
    assert next_due("@at 2027-02-30T08:00:00Z", now, now) is None


def test_duplicate_window_limit_message() -> None:
    config = StreamConfig.from_json({"name": "S", "duplicate_window": 3 * MINUTE})
    with pytest.raises(ApiError, match="larger then server limit of 2m0s"):
        config.within(ServerLimits(duplicate_window_ns=2 * MINUTE), window_given=True)
