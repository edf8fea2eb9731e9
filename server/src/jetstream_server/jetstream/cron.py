"""Cron patterns of message schedules, as nats-server parses them (server/cron.go).

Six fields, seconds first (``sec min hour dom month dow``), each a comma list of
``*`` / ``?`` / ``n`` / ``n-m`` with an optional ``/step`` (``n/step`` means
``n-max/step``); month and weekday names (``jan``, ``mon``) in any case. The
day of month and day of week match together when either is a star, else
either one matches. ``@yearly @annually @monthly @weekly @daily @midnight
@hourly`` are shorthands.

`next_fire` walks the fields like nats-server does, on Go's time semantics:
``Add`` moves an instant, while truncating to a day or month and adding days
or months rebuild a local wall time with Go's ``time.Date``, whose choice for
a wall time skipped or repeated by a daylight-saving change is reproduced in
`go_date`. A time zone is an IANA name (`load_zone`, like Go's
``time.LoadLocation``: the system's zone files, ``UTC``, ``Local``).

Bounded cost: a field that selects nothing is refused at once (nats-server
would search five years second by second to say the same), and the walk stops
at five years (nats-server's "pattern exceeds maximum range") or after
`MAX_STEPS` steps.
"""

from __future__ import annotations

import os
import re
import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Final

NS: Final = 1_000_000_000
MAX_STEPS: Final = 200_000  # the worst real pattern needs a few thousand
STAR_BIT: Final = 1 << 63
SHORTHANDS: Final = {
    "@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
# Go's unicode.IsSpace, which strings.Fields splits on
_FIELDS: Final = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_INT: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MAX: Final = (1 << 63) - 1
_MONTHS: Final = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS: Final = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}


class CronError(ValueError):
    """A pattern nats-server refuses; the text is nats-server's (it answers 10189)."""


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


_SECONDS: Final = _Bounds(0, 59)
_MINUTES: Final = _Bounds(0, 59)
_HOURS: Final = _Bounds(0, 23)
_DOM: Final = _Bounds(1, 31)
_MONTH: Final = _Bounds(1, 12, _MONTHS)
_DOW: Final = _Bounds(0, 6, _DAYS)


@dataclass(frozen=True, slots=True)
class Cron:
    """A parsed pattern: one bit per allowed value (plus STAR_BIT) per field."""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int


def parse(pattern: str) -> Cron:
    """A six-field pattern or a shorthand, else CronError."""
    fields = [f for f in _FIELDS.split(SHORTHANDS.get(pattern, pattern)) if f]
    if len(fields) != 6:
        raise CronError(f"pattern requires 6 fields, got {len(fields)}")
    bounds = (_SECONDS, _MINUTES, _HOURS, _DOM, _MONTH, _DOW)
    bits = [_field(text, b) for text, b in zip(fields, bounds, strict=True)]
    for value, b in zip(bits, bounds, strict=True):
        if value & ~STAR_BIT & _span(b.low, b.high) == 0:
            raise CronError("pattern exceeds maximum range")
    return Cron(*bits)


def _span(low: int, high: int) -> int:
    return ((1 << (high + 1)) - 1) & ~((1 << low) - 1)


def _field(text: str, bounds: _Bounds) -> int:
    bits = 0
    for expr in text.split(","):
        if expr:  # strings.FieldsFuncSeq drops empty parts
            bits |= _range(expr, bounds)
    return bits


def _range(expr: str, bounds: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, STAR_BIT
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if len(low_and_high) == 1:
            end = bounds.high
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | extra


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _int(expr)


def _int(expr: str) -> int:
    """Go's strconv.Atoi (ASCII digits, optional sign, int64), then no negatives."""
    if not _INT.fullmatch(expr):
        raise CronError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": '
                        "invalid syntax")
    # length first: Python refuses to convert very long digit strings at all
    if len(expr.lstrip("+-").lstrip("0")) > 19 or abs(int(expr)) > _INT64_MAX:
        raise CronError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": '
                        "value out of range")
    num = int(expr)
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {expr}")
    return num


# -- zones ---------------------------------------------------------------------

def load_zone(name: str) -> tzinfo | None:
    """Go's time.LoadLocation for a non-empty name: None when it does not load."""
    if name == "UTC":
        return timezone.utc
    if name == "Local":
        return _local_zone()
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _local_zone() -> tzinfo:
    """Go's time.Local: $TZ (empty: UTC), else /etc/localtime, else UTC."""
    tz = os.environ.get("TZ")
    if tz is None:
        try:
            with open("/etc/localtime", "rb") as fh:
                return zoneinfo.ZoneInfo.from_file(fh, key="Local")
        except (OSError, ValueError):
            return timezone.utc
    zone = load_zone(tz.removeprefix(":")) if tz not in ("", "UTC", "Local", ":") else None
    return zone or timezone.utc


# -- Go's time arithmetic on (unix seconds, zone) -------------------------------------

def _local(unix: int, zone: tzinfo) -> datetime:
    return datetime.fromtimestamp(unix, tz=zone)


def _offset(unix: int, zone: tzinfo) -> int:
    delta = _local(unix, zone).utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def go_date(year: int, month: int, day: int, hour: int, minute: int, second: int,
            zone: tzinfo) -> int:
    """Go's time.Date(...).Unix(): out-of-range months and days roll over; a wall
    time a daylight-saving change skips or repeats takes the offset in force
    at that wall time read as UTC, or else the one before it (so a skipped
    02:30 is 03:30 summer time, a repeated one the second, winter, one)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    days = date(year, month, 1).toordinal() - date(1970, 1, 1).toordinal() + day - 1
    wall = days * 86400 + hour * 3600 + minute * 60 + second
    offset = _offset(wall, zone)
    if offset:
        utc = wall - offset
        if _offset(utc, zone) != offset:
            offset = _offset(utc, zone)
    return wall - offset


def next_fire(cron: Cron, zone: tzinfo | None, after_ns: int) -> int:
    """The first time (unix seconds) after `after_ns` the pattern fires in `zone`
    (None: UTC), as nats-server's parseCron walks to it; CronError past five years."""
    loc = zone or timezone.utc
    t = after_ns // NS + 1
    truncated = False
    year_limit = _local(t, loc).year + 5
    steps = 0

    def step() -> None:
        nonlocal steps
        steps += 1
        if steps > MAX_STEPS:
            raise CronError("pattern exceeds maximum range")

    while True:  # nats-server's WRAP label
        now = _local(t, loc)
        if now.year > year_limit:
            raise CronError("pattern exceeds maximum range")
        wrapped = False
        while not (1 << now.month) & cron.month:
            step()
            if not truncated:
                truncated = True
                t = go_date(now.year, now.month, 1, 0, 0, 0, loc)
                now = _local(t, loc)
            t = go_date(now.year, now.month + 1, now.day, now.hour, now.minute, now.second, loc)
            now = _local(t, loc)
            if now.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not _day_matches(cron, now):
            step()
            if not truncated:
                truncated = True
                t = go_date(now.year, now.month, now.day, 0, 0, 0, loc)
                now = _local(t, loc)
            t = go_date(now.year, now.month, now.day + 1, now.hour, now.minute, now.second, loc)
            now = _local(t, loc)
            if now.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        for attr, size, bits in (("hour", 3600, cron.hour), ("minute", 60, cron.minute),
                                 ("second", 1, cron.second)):
            while not (1 << getattr(now, attr)) & bits:
                step()
                if not truncated:
                    truncated = True
                    t = (go_date(now.year, now.month, now.day, now.hour, 0, 0, loc)
                         if attr == "hour" else t - t % size)
                t += size
                now = _local(t, loc)
                if getattr(now, attr) == 0:
                    wrapped = True
                    break
            if wrapped:
                break
        if not wrapped:
            return t


def _day_matches(cron: Cron, when: datetime) -> bool:
    dom_match = bool((1 << when.day) & cron.dom)
    dow_match = bool((1 << ((when.weekday() + 1) % 7)) & cron.dow)
    if cron.dom & STAR_BIT or cron.dow & STAR_BIT:
        return dom_match and dow_match
    return dom_match or dow_match


def format_rfc3339_nano(unix_ns: int, zone: tzinfo | None) -> str:
    """Go's Time.Format(time.RFC3339Nano) in `zone` (None: UTC): trailing zeros of the
    fraction dropped, ``Z`` for a zero offset."""
    loc = zone or timezone.utc
    seconds, nanos = divmod(unix_ns, NS)
    when = _local(seconds, loc)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    offset = when.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        return text + "Z"
    sign = "+" if minutes > 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
