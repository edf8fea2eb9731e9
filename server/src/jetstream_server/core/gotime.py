"""Go's durations and times as nats-server reads and writes them.

- `parse_duration_ns`: Go's ``time.ParseDuration`` (``"1h30m"``, ``"1.5s"``,
  ``"-2m3.4s"``, ``"0"``; units ns, us, µs, ms, s, m, h), to nanoseconds, with
  its error messages (``time: invalid duration "x"``, ``time: missing unit in
  duration "1"``, ``time: unknown unit "d" in duration "1d"``) and its int64
  range. Callers add their own rules around it (bare seconds in a config
  file, ``never`` for a message TTL, a minimum of one second, ...).
- `format_duration`: Go's ``Duration.String`` (``"1m0s"``, ``"1.5s"``,
  ``"200ms"``, ``"1.1µs"``, ``"0s"``).
- `parse_rfc3339_ns`: Go's ``time.Parse(time.RFC3339, ...)`` as nats-server
  decodes a JSON time (``"2026-01-02T03:04:05.123Z"``, ``"...+01:00"``), to
  nanoseconds since the epoch; Go's zero time (``0001-01-01T00:00:00Z``) is 0,
  JetStream's "no time". Anything Go rejects is a ValueError.
- `rfc3339_ns`: epoch nanoseconds as Go's ``time.Time`` marshals to JSON in
  UTC: trailing zeros of the fraction trimmed, no fraction when it is zero, 0
  or less as the zero time; with ``fixed_fraction`` always nine digits.

Pure functions of their arguments: no clock, no I/O. Integer arithmetic
throughout, except where Go itself scales a fraction through a float64.
"""

from __future__ import annotations

import calendar
import re
import time
from typing import Final

NS_PER_US: Final = 1_000
NS_PER_MS: Final = 1_000_000
NS_PER_SECOND: Final = 1_000_000_000
NS_PER_MINUTE: Final = 60 * NS_PER_SECOND
NS_PER_HOUR: Final = 60 * NS_PER_MINUTE
MAX_DURATION_NS: Final = (1 << 63) - 1  # Go's Duration is an int64 of nanoseconds
ZERO_TIME: Final = "0001-01-01T00:00:00Z"

_DURATION_UNITS: Final = {
    "ns": 1,
    "us": NS_PER_US,
    "\u00b5s": NS_PER_US,  # µ, the micro sign
    "\u03bcs": NS_PER_US,  # μ, the Greek small letter mu
    "ms": NS_PER_MS,
    "s": NS_PER_SECOND,
    "m": NS_PER_MINUTE,
    "h": NS_PER_HOUR,
}
_DIGITS: Final = frozenset("0123456789")


class DurationError(ValueError):
    """A string Go's time.ParseDuration rejects; the message is Go's."""


def _go_quote(text: str) -> str:
    """Go's time package quoting: printable ASCII as is (``"`` and ``\\``
    escaped), every other character as the \\x escapes of its UTF-8 bytes."""
    out = ['"']
    for ch in text:
        if " " <= ch < "\x7f":
            out.append("\\" + ch if ch in '"\\' else ch)
        else:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    out.append('"')
    return "".join(out)


def _leading_digits(text: str, pos: int) -> int:
    end = pos
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return end


def parse_duration_ns(text: str) -> int:
    """Nanoseconds of a Go duration string (Go's time.ParseDuration).

    ``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+``, or ``"0"`` alone; each number needs
    a unit; the sum must fit Go's int64. Raises `DurationError` with Go's text.
    """
    invalid = f"time: invalid duration {_go_quote(text)}"
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise DurationError(invalid)
    total = 0
    pos = 0
    while pos < len(rest):
        if rest[pos] != "." and rest[pos] not in _DIGITS:
            raise DurationError(invalid)
        int_end = _leading_digits(rest, pos)
        significant = rest[pos:int_end].lstrip("0")
        if len(significant) > 19:  # more than an int64 holds (and no huge int() to make)
            raise DurationError(invalid)
        whole = int(significant or "0")
        if whole > 1 << 63:
            raise DurationError(invalid)
        frac_digits = ""
        end = int_end
        if end < len(rest) and rest[end] == ".":
            frac_end = _leading_digits(rest, end + 1)
            frac_digits = rest[end + 1 : frac_end]
            end = frac_end
        if int_end == pos and not frac_digits:
            raise DurationError(invalid)  # no digits at all: ".s", "-.s"
        unit_end = end
        while unit_end < len(rest) and rest[unit_end] != "." and rest[unit_end] not in _DIGITS:
            unit_end += 1
        if unit_end == end:
            raise DurationError(f"time: missing unit in duration {_go_quote(text)}")
        unit_name = rest[end:unit_end]
        unit = _DURATION_UNITS.get(unit_name)
        if unit is None:
            raise DurationError(
                f"time: unknown unit {_go_quote(unit_name)} in duration {_go_quote(text)}"
            )
        if whole > (1 << 63) // unit:
            raise DurationError(invalid)
        value = whole * unit
        fraction, scale = _leading_fraction(frac_digits)
        if fraction > 0:
            # as Go: the fraction is scaled through a float64 (exact to the
            # nanosecond for every fraction of an hour)
            value += int(float(fraction) * (float(unit) / scale))
            if value > 1 << 63:
                raise DurationError(invalid)
        total += value
        if total > 1 << 63:
            raise DurationError(invalid)
        pos = unit_end
    if negative:
        return -total
    if total > MAX_DURATION_NS:
        raise DurationError(invalid)
    return total


def _leading_fraction(digits: str) -> tuple[int, float]:
    """Go's leadingFraction: the digits as an integer and 10**count, where
    digits that would overflow an int64 are dropped (precision, not range)."""
    value, scale = 0, 1.0
    for ch in digits:
        if value > MAX_DURATION_NS // 10:
            break
        nxt = value * 10 + ord(ch) - 48
        if nxt > 1 << 63:
            break
        value = nxt
        scale *= 10
    return value, scale


def _fraction(value: int, digits: int) -> tuple[str, int]:
    """Go's fmtFrac: ``value / 10**digits`` split into its fraction text
    (``".25"``, trailing zeros and a bare point omitted) and the integer part."""
    whole, frac = divmod(value, 10**digits)
    text = f"{frac:0{digits}d}".rstrip("0") if digits else ""
    return ("." + text if text else ""), whole


def format_duration(ns: int) -> str:
    """A duration as Go's Duration.String prints it: ``72h3m0.5s``, ``1m0s``,
    ``1.5ms``, ``1.1µs``, ``12ns``, ``0s`` (days are not a unit)."""
    sign = "-" if ns < 0 else ""
    u = -ns if ns < 0 else ns
    if u < NS_PER_SECOND:
        if u == 0:
            return "0s"
        if u < NS_PER_US:
            return f"{sign}{u}ns"
        if u < NS_PER_MS:
            frac, whole = _fraction(u, 3)
            return f"{sign}{whole}{frac}\u00b5s"
        frac, whole = _fraction(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, seconds = _fraction(u, 9)
    minutes, secs = divmod(seconds, 60)
    out = f"{secs}{frac}s"
    if minutes:
        hours, mins = divmod(minutes, 60)
        out = f"{mins}m{out}"
        if hours:
            out = f"{hours}h{out}"
    return sign + out


# -- RFC 3339 -----------------------------------------------------------------

_RFC3339_RE: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:[.,]([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_DAYS_IN_MONTH: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_in_month(year: int, month: int) -> int:
    return 29 if month == 2 and calendar.isleap(year) else _DAYS_IN_MONTH[month - 1]


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, 0 too)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def parse_rfc3339_ns(text: str) -> int:
    """Epoch nanoseconds of an RFC 3339 time, as Go's time.Parse(time.RFC3339)
    takes it: ``T`` and ``Z`` upper case, a fraction of any length (cut to
    nanoseconds; ``.`` or ``,``), the date and the time in range, a zone of at
    most 23:59. Go's zero time is 0. ValueError (``not an RFC 3339 time``)
    for anything else."""
    m = _RFC3339_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    zone = m.group(8)
    in_range = (
        1 <= month <= 12
        and 1 <= day <= _days_in_month(year, month)
        and hour <= 23
        and minute <= 59
        and second <= 59
        and (zone == "Z" or (int(zone[1:3]) <= 23 and int(zone[4:6]) <= 59))
    )
    if not in_range:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    nanos = int((m.group(7) or "")[:9].ljust(9, "0"))
    if (year, month, day, hour, minute, second, nanos, zone) == (1, 1, 1, 0, 0, 0, 0, "Z"):
        return 0
    secs = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    if zone != "Z":
        offset = int(zone[1:3]) * 3600 + int(zone[4:6]) * 60
        secs -= offset if zone[0] == "+" else -offset
    return secs * NS_PER_SECOND + nanos


def rfc3339_ns(timestamp_ns: int, *, fixed_fraction: bool = False) -> str:
    """Epoch nanoseconds as RFC 3339 in UTC, the way Go marshals a time.Time:
    the fraction without its trailing zeros (none when zero), 0 or less as
    Go's zero time. `fixed_fraction`: always nine digits (the monitoring
    endpoints' format)."""
    if timestamp_ns <= 0 and not fixed_fraction:
        return ZERO_TIME
    secs, nanos = divmod(timestamp_ns, NS_PER_SECOND)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    if fixed_fraction:
        return f"{base}.{nanos:09d}Z"
    if nanos:
        return f"{base}.{nanos:09d}".rstrip("0") + "Z"
    return base + "Z"
