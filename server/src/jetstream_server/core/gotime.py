"""Times as JetStream writes them: RFC 3339, UTC, with nanoseconds.

Go's `time.Time` marshals with trailing zeros of the fraction trimmed
(`2026-01-02T03:04:05.1234Z`, or no fraction at all when it is zero), and the
zero time as `0001-01-01T00:00:00Z`. nats-py and the Spark connector parse
both. Pure functions, no clock.
"""

from __future__ import annotations

import re
import time

ZERO_TIME = "0001-01-01T00:00:00Z"

_RFC3339_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$"
)


def rfc3339_ns(timestamp_ns: int) -> str:
    """Format epoch nanoseconds as RFC 3339 UTC (0 or less is Go's zero time)."""
    if timestamp_ns <= 0:
        return ZERO_TIME
    secs, nanos = divmod(timestamp_ns, 1_000_000_000)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    if nanos:
        return f"{base}.{nanos:09d}".rstrip("0") + "Z"
    return base + "Z"


def parse_rfc3339_ns(text: str) -> int:
    """Epoch nanoseconds of an RFC 3339 time (ValueError when malformed)."""
    import calendar

    m = _RFC3339_RE.match(text.strip())
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    if year == 1 and month == 1 and day == 1 and hour == minute == second == 0:
        return 0
    frac = (m.group(7) or "").ljust(9, "0")
    secs = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    zone = m.group(8)
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        secs -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return secs * 1_000_000_000 + int(frac or "0")
