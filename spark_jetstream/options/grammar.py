"""The value grammar every option of the `jetstream` source and sink is read with.

One parser per kind of value; each takes the option's name and the raw text
and either returns the value or raises `OptionError` whose message names the
option and quotes what was given. The option table (`table.py`) says which
option has which kind; nothing else parses option values.

- Durations, Go style: one or more `<number><unit>` parts, units `ns`, `us`
  (`µs`), `ms`, `s`, `m` (`min`), `h`, `d`, case-insensitive, spaces allowed
  between parts (`1h30m`, `500ms`, `90s`, `1.5h`); a plain number is seconds
  (`30`). No minus sign: a duration is never negative. Result: nanoseconds.
- Sizes: a plain number of bytes, or a whole number with a unit `b`, `k`, `m`,
  `g`, `t` (also `kb`/`kib`, `mb`/`mib`, ...), case-insensitive, powers of
  1024 as Spark's byte strings and nats-server's configuration read them.
- Counts: a decimal integer within the option's bounds.
- Booleans: `true`/`false`, `yes`/`no`, `1`/`0`, case-insensitive.
- Timestamps: milliseconds since the epoch, or an ISO-8601 time (UTC when it
  names no zone).
- Names (streams, consumers) and subjects follow the NATS rules.

Invariants: every parser is pure (no I/O; file options are checked in `files.py`),
and a value that parses is in range; surrounding spaces are ignored except in
free text (passwords, prefixes), which is taken as given.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from fractions import Fraction
from typing import Final

__all__ = [
    "GRAMMAR_MARKDOWN",
    "OptionError",
    "check_filter_subject",
    "check_publish_subject",
    "format_duration_ns",
    "parse_bool",
    "parse_choice",
    "parse_count",
    "parse_duration_ns",
    "parse_name",
    "parse_position",
    "parse_size",
    "parse_stream_map",
    "parse_timestamp_ms",
]


class OptionError(ValueError):
    """An invalid data source option; the message names the option."""


# -- durations ---------------------------------------------------------------------

NS_PER_S: Final = 1_000_000_000
_DURATION_UNITS_NS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # micro sign U+00B5
    "μs": 1_000,  # Greek mu U+03BC (Go accepts both)
    "ms": 1_000_000,
    "s": NS_PER_S,
    "m": 60 * NS_PER_S,
    "min": 60 * NS_PER_S,
    "h": 3_600 * NS_PER_S,
    "d": 86_400 * NS_PER_S,
}
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
# longer units first: "ms" and "min" must not be read as "m" followed by garbage
# ASCII: `\d` is 0-9 only (no other scripts' digits)
_DURATION_PART = re.compile(rf"\s*({_NUMBER})\s*(ns|us|µs|μs|ms|min|s|m|h|d)", re.IGNORECASE | re.ASCII)
_PLAIN_NUMBER = re.compile(_NUMBER, re.ASCII)


def parse_duration_ns(name: str, raw: str, *, minimum_ns: int = 0, seconds_first: bool = False) -> int:
    """A duration in nanoseconds (see the module docstring for the grammar).

    `seconds_first` only orders the error message for options documented as
    "seconds" (`ackTimeout=30`); both spellings are accepted either way.
    """
    text = raw.strip()
    if text.startswith("+"):  # as Go allows; a duration is never negative
        text = text[1:]
    # exact decimal arithmetic: 1.001s is 1001000000ns, not one less
    if _PLAIN_NUMBER.fullmatch(text):
        total = Fraction(text) * NS_PER_S
    else:
        total, pos = Fraction(0), 0
        while pos < len(text):
            m = _DURATION_PART.match(text, pos)
            if m is None:
                break
            total += Fraction(m.group(1)) * _DURATION_UNITS_NS[m.group(2).lower()]
            pos = m.end()
        if pos != len(text) or not text:
            expected = (
                "a number of seconds or a duration such as 500ms, 30s, 15m, 1h30m"
                if seconds_first
                else "a duration such as 500ms, 30s, 15m, 1h30m or a number of seconds"
            )
            raise OptionError(f"option {name}: expected {expected}, got {raw!r}")
    ns = int(total)
    if ns < minimum_ns:
        raise OptionError(f"option {name}: must be >= {minimum_ns / NS_PER_S:g}s, got {raw!r}")
    return ns


def _decimal(value: int, scale: int) -> str:
    """`value / scale` written exactly (scale a power of ten), without trailing zeros."""
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    return f"{whole}.{frac:0{len(str(scale)) - 1}d}".rstrip("0")


def format_duration_ns(ns: int) -> str:
    """Nanoseconds as an exact duration in the same grammar (`1h30m`, `1.5s`, `250ms`)."""
    if ns < 1_000:
        return f"{ns}ns" if ns else "0s"
    if ns < 1_000_000:
        return _decimal(ns, 1_000) + "us"
    if ns < NS_PER_S:
        return _decimal(ns, 1_000_000) + "ms"
    hours, rest = divmod(ns, 3_600 * NS_PER_S)
    minutes, rest = divmod(rest, 60 * NS_PER_S)
    return (
        (f"{hours}h" if hours else "")
        + (f"{minutes}m" if minutes else "")
        + (_decimal(rest, NS_PER_S) + "s" if rest else "")
    )


# -- sizes and counts --------------------------------------------------------------

_SIZE = re.compile(r"\+?(\d+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?", re.IGNORECASE | re.ASCII)
_SIZE_POWER: Final = {"b": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(name: str, raw: str, *, minimum: int = 1) -> int:
    """A size in bytes: `1048576`, `512k`, `64MiB`, `1g` (powers of 1024)."""
    m = _SIZE.fullmatch(raw.strip())
    if m is None:
        raise OptionError(
            f"option {name}: expected an integer number of bytes or a size such as 512k, 64m, 1g, "
            f"got {raw!r}"
        )
    unit = (m.group(2) or "b").lower()
    value = int(m.group(1)) * int(1024 ** _SIZE_POWER[unit[0]])
    if value < minimum:
        raise OptionError(f"option {name}: must be >= {minimum}, got {raw!r}")
    return value


_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


def parse_count(name: str, raw: str, *, minimum: int = 0, maximum: int | None = None) -> int:
    """A whole number in [minimum, maximum]."""
    text = raw.strip()
    if not _INTEGER.fullmatch(text):
        raise OptionError(f"option {name}: expected an integer, got {raw!r}")
    value = int(text)
    if maximum is not None and not minimum <= value <= maximum:
        raise OptionError(f"option {name}: must be between {minimum} and {maximum}, got {raw!r}")
    if value < minimum:
        raise OptionError(f"option {name}: must be >= {minimum}, got {raw!r}")
    return value


# -- booleans, choices, timestamps, positions ---------------------------------------

_TRUE: Final = frozenset({"true", "yes", "1"})
_FALSE: Final = frozenset({"false", "no", "0"})


def parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise OptionError(f"option {name}: expected true or false, got {raw!r}")


def parse_choice(name: str, raw: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (lower case), matched case-insensitively."""
    value = raw.strip().lower()
    if value not in choices:
        raise OptionError(f"option {name}: expected {' or '.join(choices)}, got {raw!r}")
    return value


def parse_timestamp_ms(name: str, raw: str) -> int:
    text = raw.strip()
    if _INTEGER.fullmatch(text):
        value = int(text)
        if value < 0:
            raise OptionError(f"option {name}: must be >= 0, got {raw!r}")
        return value
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise OptionError(
            f"option {name}: expected milliseconds since the epoch or an ISO-8601 time, got {raw!r}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def parse_position(name: str, raw: str, words: tuple[str, ...]) -> str | int:
    """One of `words` (e.g. earliest, latest) or a stream sequence (>= 1)."""
    text = raw.strip().lower()
    if text in words:
        return text
    if not _INTEGER.fullmatch(text):
        raise OptionError(
            f"option {name}: expected {' or '.join(words)} or a stream sequence number, got {raw!r}"
        )
    value = int(text)
    if value < 1:
        raise OptionError(f"option {name}: a stream sequence starts at 1, got {raw!r}")
    return value


def parse_stream_map(name: str, raw: str) -> dict[str, str]:
    """A JSON object of stream name -> value (`{"ORDERS": 1200, "EVENTS": "latest"}`); each
    value as text, for the option's own parser (named `<option>[<stream>]` in its errors)."""
    import json

    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise OptionError(f"option {name}: not a JSON object of stream -> value ({exc}): {raw!r}") from None
    if not isinstance(data, dict) or not data:
        raise OptionError(f"option {name}: expected a JSON object of stream -> value, got {raw!r}")
    out: dict[str, str] = {}
    for stream, value in data.items():
        parse_name(name, stream, "stream name")
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise OptionError(f"option {name}: the value of stream {stream!r} must be a string or a number, got {value!r}")
        out[stream] = str(value)
    return out


# -- names, subjects, files ----------------------------------------------------------

_NAME_BAD = re.compile(r"[\s.*>/\\]")
_PUBLISH_SUBJECT_BAD = re.compile(r"[\s*>]")


def parse_name(name: str, raw: str, what: str) -> str:
    """A stream or consumer name: no spaces, dots, wildcards or slashes."""
    value = raw.strip()
    if not value or _NAME_BAD.search(value):
        raise OptionError(
            f"option {name}: invalid {what} {value!r} (no spaces, dots, wildcards * >, slashes)"
        )
    return value


def check_filter_subject(name: str, subject: str) -> None:
    """Raise unless `subject` is a valid subscription subject (wildcards allowed)."""
    tokens = subject.split(".")
    for i, token in enumerate(tokens):
        bad = (
            token == ""
            or any(ch.isspace() for ch in token)
            or (">" in token and (token != ">" or i != len(tokens) - 1))
            or ("*" in token and token != "*")
        )
        if bad:
            raise OptionError(f"option {name}: invalid subject {subject!r}")


def check_publish_subject(subject: str, what: str) -> None:
    """Raise unless `subject` is a valid subject to publish to; `what` starts the message."""
    if not subject:
        raise OptionError(f"{what}: empty subject")
    if _PUBLISH_SUBJECT_BAD.search(subject):
        raise OptionError(
            f"{what}: {subject!r} is not a subject to publish to (no spaces or wildcards * >)"
        )
    if any(token == "" for token in subject.split(".")):
        raise OptionError(f"{what}: {subject!r} has an empty token")


GRAMMAR_MARKDOWN: Final = """\
Option names are case-insensitive; an empty value is the same as not setting the option; an
unknown option or a bad value fails before anything runs, naming the option. Every option reads
its value with one grammar:

- durations: Go style, `500ms`, `90s`, `15m`, `1h30m`, `1.5h`, `2d` (units `ns`, `us`, `ms`, `s`,
  `m`/`min`, `h`, `d`, any case); a plain number is seconds;
- sizes: bytes, or a whole number with `k`, `m`, `g` or `t` (`kb`/`kib` ... alike, powers of
  1024, as Spark reads byte sizes): `1048576`, `512k`, `64MiB`;
- counts: whole numbers; booleans: `true`/`false` (also `yes`/`no`, `1`/`0`);
- timestamps: milliseconds since the epoch or ISO-8601 (UTC when no zone is given)."""
