"""The one value grammar of every option (options/grammar.py): durations, sizes, counts,
booleans, timestamps, positions, names and subjects; errors name the option."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jetstream.options import OptionError
from spark_jetstream.options.grammar import (
    check_filter_subject,
    check_publish_subject,
    format_duration_ns,
    parse_bool,
    parse_choice,
    parse_count,
    parse_duration_ns,
    parse_name,
    parse_position,
    parse_size,
    parse_timestamp_ms,
)

S = 10**9


@pytest.mark.parametrize(
    ("text", "ns"),
    [("0", 0), ("600", 600 * 10**9), ("2min", 120 * 10**9), ("1d", 86400 * 10**9), ("90s", 90 * 10**9), ("10m", 600 * 10**9), ("1h30m", 5400 * 10**9), ("500ms", 5 * 10**8), ("1.5s", 15 * 10**8)],
)
def test_durations(text: str, ns: int) -> None:
    assert parse_duration_ns("x", text) == ns


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("15m", 900 * S),
        ("1H", 3600 * S),  # units in any case
        ("500MS", S // 2),
        (" 5 s ", 5 * S),  # spaces around and between the parts
        ("1h 30m", 5400 * S),
        ("2h45m30s", (2 * 3600 + 45 * 60 + 30) * S),
        ("1.5h", 5400 * S),
        (".5s", S // 2),
        ("100us", 100_000),
        ("100µs", 100_000),
        ("100μs", 100_000),
        ("7ns", 7),
        ("30", 30 * S),  # a plain number is seconds
        ("0.25", S // 4),
        ("+5s", 5 * S),  # a plus sign, as Go allows
    ],
)
def test_go_style_compound_durations(text: str, ns: int) -> None:
    assert parse_duration_ns("maxTriggerDelay", text) == ns


@pytest.mark.parametrize("text", ["", "soon", "10 minutes", "10x", "-5s", "-5", "5s-", "1h30", "h", "1e3s", "1e3", "inf", "nan", "1_000", "5 mins", "++5s"])
def test_bad_durations_name_the_option(text: str) -> None:
    with pytest.raises(OptionError, match="option maxTriggerDelay: expected a duration such as 500ms"):
        parse_duration_ns("maxTriggerDelay", text)


def test_duration_options_documented_in_seconds_say_so_first() -> None:
    with pytest.raises(OptionError, match="option ackTimeout: expected a number of seconds or a duration"):
        parse_duration_ns("ackTimeout", "soon", seconds_first=True)
    with pytest.raises(OptionError, match="option ackTimeout: must be >= 0.1s, got '50ms'"):
        parse_duration_ns("ackTimeout", "50ms", minimum_ns=S // 10, seconds_first=True)


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["ms", "s", "m", "h"]))
def test_formatted_durations_parse_back(n: int, unit: str) -> None:
    ns = parse_duration_ns("x", f"{n}{unit}")
    assert parse_duration_ns("x", format_duration_ns(ns)) == ns


@given(st.integers(min_value=0, max_value=10**18))
def test_any_duration_formats_exactly(ns: int) -> None:
    assert parse_duration_ns("x", format_duration_ns(ns)) == ns


def test_format_duration() -> None:
    assert format_duration_ns(120 * 10**9) == "2m"
    assert format_duration_ns(5 * 10**9) == "5s"
    assert format_duration_ns(1500 * 10**6) == "1.5s"
    assert format_duration_ns(3600 * 10**9) == "1h"
    assert format_duration_ns(5400 * 10**9) == "1h30m"
    assert format_duration_ns(250 * 10**6) == "250ms"
    assert format_duration_ns(0) == "0s"


@pytest.mark.parametrize(
    ("text", "size"),
    [("1", 1), ("4096", 4096), ("512k", 512 * 1024), ("512KB", 512 * 1024), ("64MiB", 64 << 20), ("64 m", 64 << 20), ("1g", 1 << 30), ("2T", 2 << 40), ("10b", 10), ("+5", 5)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size("maxBytesPerTrigger", text) == size


@pytest.mark.parametrize("text", ["lots", "1.5m", "-1", "10 bytes", "1e6", "m"])
def test_bad_sizes_name_the_option(text: str) -> None:
    with pytest.raises(OptionError, match="option maxBytesPerTrigger: expected an integer number of bytes or a size such as 512k"):
        parse_size("maxBytesPerTrigger", text)
    with pytest.raises(OptionError, match="option maxBytesPerTrigger: must be >= 1, got '0k'"):
        parse_size("maxBytesPerTrigger", "0k")


def test_counts() -> None:
    assert parse_count("n", " 42 ") == 42
    assert parse_count("n", "+7", minimum=1) == 7
    with pytest.raises(OptionError, match="option n: expected an integer, got '1.5'"):
        parse_count("n", "1.5")
    with pytest.raises(OptionError, match="option n: expected an integer, got '1_000'"):
        parse_count("n", "1_000")
    with pytest.raises(OptionError, match="option n: must be >= 1, got '-1'"):
        parse_count("n", "-1", minimum=1)
    with pytest.raises(OptionError, match="option n: must be between 1 and 9, got '10'"):
        parse_count("n", "10", minimum=1, maximum=9)


@pytest.mark.parametrize(("text", "value"), [("true", True), ("TRUE", True), ("yes", True), ("1", True), (" False ", False), ("no", False), ("0", False)])
def test_booleans(text: str, value: bool) -> None:
    assert parse_bool("b", text) is value


def test_bad_boolean_and_choice() -> None:
    with pytest.raises(OptionError, match="option b: expected true or false, got 'perhaps'"):
        parse_bool("b", "perhaps")
    assert parse_choice("mode", " FAIL", ("warn", "fail")) == "fail"
    with pytest.raises(OptionError, match="option mode: expected warn or fail, got 'loud'"):
        parse_choice("mode", "loud", ("warn", "fail"))


def test_timestamps_and_positions() -> None:
    assert parse_timestamp_ms("t", "1700000000000") == 1700000000000
    assert parse_timestamp_ms("t", "2023-11-14T22:13:20+01:00") == 1700000000000 - 3600_000
    with pytest.raises(OptionError, match="option t: must be >= 0"):
        parse_timestamp_ms("t", "-1")
    assert parse_position("p", "LATEST", ("earliest", "latest")) == "latest"
    assert parse_position("p", "12", ("latest",)) == 12
    with pytest.raises(OptionError, match="option p: a stream sequence starts at 1"):
        parse_position("p", "0", ("latest",))


def test_names_and_subjects() -> None:
    assert parse_name("durable", " app ", "consumer name") == "app"
    for bad in ("a.b", "a b", "a*", "a>", "a/b", "a\\b", ""):
        with pytest.raises(OptionError, match="option durable: invalid consumer name"):
            parse_name("durable", bad, "consumer name")
    check_filter_subject("subjects", "a.*.>")
    with pytest.raises(OptionError, match="option subjects: invalid subject 'a.>.b'"):
        check_filter_subject("subjects", "a.>.b")
    check_publish_subject("a.b", "option subject")
    with pytest.raises(OptionError, match="option subject: 'a.\\*' is not a subject to publish to"):
        check_publish_subject("a.*", "option subject")
