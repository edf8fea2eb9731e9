"""Parsing and formatting of the values natscli reads and prints.

Input: durations in natscli's syntax (Go durations plus `d`, `w`, `M`, `y`, e.g. `24h`,
`1d12h`, `500ms`; `-1` means unlimited where natscli allows it) and byte sizes (`1024`,
`10MB`, `1GiB`; a negative value means unlimited). A value that does not parse raises
`ValueError` naming it, which the commands turn into a one-line error.

Output: the formatting natscli applies to table cells and `key: value` rows, so output reads
the same as in the NATS documentation: thousands separators (`1,234`), IEC sizes (`1.5 KiB`),
durations (`2m0s`, `1d0h0m0s`, `3.01s`), local times `2006-01-02 15:04:05`.

Durations are integers of nanoseconds throughout, as in the JetStream API JSON.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone

NANOS_PER_SECOND = 1_000_000_000
_UNIT_NANOS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": NANOS_PER_SECOND,
    "m": 60 * NANOS_PER_SECOND,
    "h": 3600 * NANOS_PER_SECOND,
    "d": 24 * 3600 * NANOS_PER_SECOND,
    "D": 24 * 3600 * NANOS_PER_SECOND,
    "w": 7 * 24 * 3600 * NANOS_PER_SECOND,
    "W": 7 * 24 * 3600 * NANOS_PER_SECOND,
    "M": 30 * 24 * 3600 * NANOS_PER_SECOND,
    "y": 365 * 24 * 3600 * NANOS_PER_SECOND,
    "Y": 365 * 24 * 3600 * NANOS_PER_SECOND,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d|D|w|W|M|y|Y)")
_BYTES = re.compile(r"^(\d+)\s*([A-Za-z]+)$")
_BYTE_SHIFT = {"B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30,
               "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}


def parse_duration(text: str) -> int:
    """Nanoseconds of a natscli duration (`1h30m`, `24h`, `2d`, `-5s`, `0`)."""
    value = text.strip()
    if value == "0":
        return 0
    sign = 1
    body = value
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_NANOS[match.group(2)]
        pos = match.end()
    if pos != len(body):
        raise ValueError(
            f"invalid duration {text!r} (use units ns, us, ms, s, m, h, d, w, M, y, e.g. 24h)"
        )
    return sign * int(round(total))


def parse_bytes(text: str) -> int:
    """Bytes of a natscli size (`1024`, `10MB`, `1GiB`); negative means unlimited (-1)."""
    value = text.strip()
    if value.startswith("-"):
        return -1
    if value.isdigit():
        return int(value)
    match = _BYTES.match(value)
    if match is None or match.group(2).upper() not in _BYTE_SHIFT:
        raise ValueError(
            f"invalid bytes specification {text!r}: bytes must end in B, K, KB, M, MB, G, GB, T or TB"
        )
    return int(match.group(1)) << _BYTE_SHIFT[match.group(2).upper()]


def comma(value: int | float) -> str:
    """natscli's integer formatting: `1234567` -> `1,234,567`."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return f"{int(value):,}"


def ibytes(size: int) -> str:
    """IEC sizes as natscli prints them: `0 B`, `104 B`, `1.5 KiB`, `12 MiB`."""
    if size < 10:
        return f"{size} B"
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    exponent = min(int(math.floor(math.log(size, 1024))), len(units) - 1)
    shown = math.floor(size / 1024**exponent * 10 + 0.5) / 10
    return f"{shown:.1f} {units[exponent]}" if shown < 10 else f"{shown:.0f} {units[exponent]}"


def _go_fraction(value: int, digits: int) -> str:
    whole, frac = divmod(value, 10**digits)
    if frac == 0:
        return str(whole)
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"


def go_duration(nanos: int) -> str:
    """Go's `time.Duration.String()`: `0s`, `1.5s`, `300ms`, `2m0s`, `1h0m0s`."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n < 1_000:
        return f"{sign}{n}ns"
    if n < 1_000_000:
        return f"{sign}{_go_fraction(n, 3)}µs"
    if n < NANOS_PER_SECOND:
        return f"{sign}{_go_fraction(n, 6)}ms"
    hours, rest = divmod(n, 3600 * NANOS_PER_SECOND)
    minutes, rest = divmod(rest, 60 * NANOS_PER_SECOND)
    seconds = _go_fraction(rest, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return f"{sign}{seconds}"


def human_duration(nanos: int) -> str:
    """natscli's duration cells: `2m0s`, `1d0h0m0s`, `3.01s`, `12ms`; `never` for max."""
    if nanos >= 2**63 - 1:
        return "never"
    if nanos < 1_000_000:
        return go_duration(round(nanos / 1_000) * 1_000)
    if nanos < NANOS_PER_SECOND:
        return go_duration(round(nanos / 1_000_000) * 1_000_000)
    secs = nanos // NANOS_PER_SECOND
    mins, hrs, days = secs // 60, secs // 3600, secs // 86400
    years = days // 365
    if years:
        return f"{years}y{days % 365}d{hrs % 24}h{mins % 60}m{secs % 60}s"
    if days:
        return f"{days}d{hrs % 24}h{mins % 60}m{secs % 60}s"
    if hrs:
        return f"{hrs}h{mins % 60}m{secs % 60}s"
    if mins:
        return f"{mins}m{secs % 60}s"
    return f"{nanos / NANOS_PER_SECOND:.2f}s"


@dataclass(frozen=True, slots=True)
class GoTime:
    """A server timestamp (RFC 3339, nanoseconds) kept whole for printing."""

    utc: datetime
    nanos: int  # the fraction of the second, 0..999999999

    @classmethod
    def parse(cls, text: str) -> GoTime:
        match = re.match(
            r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$", text
        )
        if match is None:
            raise ValueError(f"invalid time {text!r}")
        date, clock, frac, zone = match.groups()
        zone = "+00:00" if zone == "Z" else zone
        moment = datetime.fromisoformat(f"{date}T{clock}{zone}").astimezone(timezone.utc)
        nanos = int((frac or "0")[:9].ljust(9, "0"))
        return cls(moment, nanos)

    @property
    def is_zero(self) -> bool:
        """Go's zero time (year 1) or the Unix epoch: servers send either for "never"."""
        return self.utc.year <= 1 or (self.utc.timestamp() == 0 and self.nanos == 0)

    def unix_nanos(self) -> int:
        return int(self.utc.timestamp()) * NANOS_PER_SECOND + self.nanos

    def local(self) -> str:
        """natscli's `f(time)`: local time, to the second."""
        if self.utc.year <= 1:
            return "0001-01-01 00:00:00"
        return self.utc.astimezone().strftime("%Y-%m-%d %H:%M:%S")

    def go_string(self) -> str:
        """Go's `%v` of a UTC time: `2024-05-01 10:00:00.123456789 +0000 UTC`."""
        frac = f".{str(self.nanos).rjust(9, '0').rstrip('0')}" if self.nanos else ""
        return self.utc.strftime("%Y-%m-%d %H:%M:%S") + frac + " +0000 UTC"

    def since(self, now_nanos: int) -> int:
        """Nanoseconds from this time to `now_nanos`; Go saturates from the zero time."""
        if self.utc.year <= 1:
            return 2**63 - 1
        return now_nanos - self.unix_nanos()


def parse_time(value: object) -> GoTime | None:
    """A server time field, or None when absent or malformed."""
    if not isinstance(value, str):
        return None
    try:
        return GoTime.parse(value)
    except ValueError:
        return None


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def rfc3339_ns(unix_nanos: int) -> str:
    """A Unix time in nanoseconds as RFC 3339 UTC with nanoseconds (the API's time format)."""
    seconds, frac = divmod(unix_nanos, NANOS_PER_SECOND)
    base = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{frac:09d}Z"
