"""Message schedules (ADR-51): `allow_msg_schedules` and the ``Nats-Schedule*`` headers.

A message published on a stream with `allow_msg_schedules` and a
``Nats-Schedule`` header is a schedule: it stays stored on its subject (a
``Nats-Rollup: sub`` is added, so the newest schedule per subject counts) and,
when due, the server publishes into the stream, on ``Nats-Schedule-Target``,
a copy of it (or of the last message on ``Nats-Schedule-Source``) without the
schedule headers and with ``Nats-Scheduler: <schedule subject>`` and
``Nats-Schedule-Next``: the next time for a repeating schedule, ``purge`` for
a one-shot one (storing that purges the schedule's subject).
``Nats-Schedule-TTL`` becomes the produced message's ``Nats-TTL``.

Patterns: ``@at <RFC 3339 time>`` (once), ``@every <Go duration>`` (at least
1 s) and cron patterns (six fields with seconds, ``@hourly`` ..., see
`cron`), which alone take a ``Nats-Schedule-Time-Zone`` (an IANA name; a
present zone header is checked even without a pattern, as nats-server does).
A repeating schedule that would fire several times (after a restart) fires
once and then counts from now. ``Nats-Schedule-Next`` is Go's RFC 3339 (with
nanoseconds) in the schedule's zone.

`check_publish` runs nats-server's checks of a publish (server/stream.go
processJetStreamMsg, "Message scheduling"), in its order; `Scheduler` keeps the
due times on the injected clock and `fire` builds the produced message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Final

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.gotime import DurationError, parse_duration_ns, parse_rfc3339_ns
from jetstream_server.core.headers import Headers, encode_headers
from jetstream_server.jetstream import cron
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.subject_match import subjects_overlap

SCHEDULE: Final = "Nats-Schedule"
TIME_ZONE: Final = "Nats-Schedule-Time-Zone"
TTL: Final = "Nats-Schedule-TTL"
ROLLUP: Final = "Nats-Schedule-Rollup"
TARGET: Final = "Nats-Schedule-Target"
SOURCE: Final = "Nats-Schedule-Source"
SCHEDULER: Final = "Nats-Scheduler"
NEXT: Final = "Nats-Schedule-Next"
PURGE: Final = "purge"
NS: Final = 1_000_000_000


def _go_duration_ns(text: str) -> int | None:
    """Go's time.ParseDuration, None when it does not parse."""
    try:
        return parse_duration_ns(text)
    except DurationError:
        return None


def _rfc3339_ns(text: str) -> int | None:
    """Go's time.Parse(time.RFC3339, text) as nanoseconds since the epoch."""
    try:
        return parse_rfc3339_ns(text)
    except ValueError:
        return None


def _round_s(ns: int) -> int:
    """Go's Round(time.Second): halfway rounds up."""
    return (ns + NS // 2) // NS * NS


def next_due(pattern: str, stored_ns: int, now_ns: int,
             zone: tzinfo | None = None) -> tuple[int, bool] | None:
    """(when it fires, whether it repeats) for a pattern, None when invalid;
    `stored_ns`: when the schedule was stored or last fired; `zone`: the
    schedule's time zone (only cron patterns take one)."""
    if pattern.startswith("@at "):
        due = _rfc3339_ns(pattern[4:])
        return None if due is None or zone is not None else (due, False)
    if pattern.startswith("@every "):
        every = _go_duration_ns(pattern[7:])
        if every is None or every < NS or zone is not None:
            return None
        due = _round_s(stored_ns) + every
        if due < now_ns:
            due = _round_s(now_ns) + every  # fire once, not for every missed turn
        return due, True
    try:
        parsed = cron.parse(pattern)
        due = cron.next_fire(parsed, zone, stored_ns) * NS
        if due < now_ns:
            due = cron.next_fire(parsed, zone, _round_s(now_ns)) * NS
    except cron.CronError:
        return None
    return due, True


def zone_of(hdr: Headers) -> tuple[bool, tzinfo | None]:
    """(valid, zone) of the ``Nats-Schedule-Time-Zone`` header: absent is valid and
    None; present it must name a zone (nats-server's loadMessageScheduleLocation)."""
    name = hdr.get(TIME_ZONE)
    if name is None:
        return True, None
    zone = cron.load_zone(name) if name else None
    return zone is not None, zone


def stored_due(hdr: Headers, stored_ns: int, now_ns: int) -> int | None:
    """When a stored schedule is due (nats-server's nextMessageSchedule from the
    message's time), None when it is not a valid schedule."""
    pattern = hdr.get(SCHEDULE)
    zone_ok, zone = zone_of(hdr)
    if not pattern or not zone_ok:
        return None
    found = next_due(pattern, stored_ns, now_ns, zone)
    return None if found is None else found[0]


def _ttl_ok(value: str) -> bool:
    if value == "never":
        return True
    if value.isdigit():
        return True
    ns = _go_duration_ns(value)
    return ns is not None and ns >= NS


@dataclass(frozen=True, slots=True)
class Checked:
    """A schedule publish that passed: when it is due, and whether to add the rollup."""

    due_ns: int | None  # None: not a schedule
    add_rollup: bool = False


def check_publish(
    hdr: Headers,
    subject: str,
    stream_subjects: Sequence[str],
    allowed: bool,
    allow_ttl: bool,
    now_ns: int,
    last_on: Callable[[str], Headers | None],
) -> Checked:
    """nats-server's checks of a publish's schedule headers (see module docstring)."""
    pattern = hdr.get(SCHEDULE)
    due: int | None = None
    zone_ok, zone = zone_of(hdr)
    if not zone_ok:
        raise ApiError(Err.MESSAGE_SCHEDULES_TIME_ZONE_INVALID if allowed
                       else Err.MESSAGE_SCHEDULES_DISABLED)
    if pattern:
        found = next_due(pattern, now_ns, now_ns, zone)
        if found is None:
            raise ApiError(Err.MESSAGE_SCHEDULES_PATTERN_INVALID if allowed
                           else Err.MESSAGE_SCHEDULES_DISABLED)
        if not allowed:
            raise ApiError(Err.MESSAGE_SCHEDULES_DISABLED)
        ttl = hdr.get(TTL) or ""
        if ttl and not _ttl_ok(ttl):
            raise ApiError(Err.MESSAGE_SCHEDULES_TTL_INVALID)
        rollup = hdr.get(ROLLUP) or ""
        if rollup and rollup != "sub":
            raise ApiError(Err.MESSAGE_SCHEDULES_ROLLUP_INVALID)
        if ttl and not allow_ttl:
            raise ApiError(Err.MESSAGE_TTL_DISABLED)
        target = hdr.get(TARGET) or ""
        if not _publish_subject(target) or target == subject:
            raise ApiError(Err.MESSAGE_SCHEDULES_TARGET_INVALID)
        source = hdr.get(SOURCE) or ""
        if source and (source in (target, subject) or not _publish_subject(source)):
            raise ApiError(Err.MESSAGE_SCHEDULES_SOURCE_INVALID)
        if not any(subjects_overlap(s, target) for s in stream_subjects):
            raise ApiError(Err.MESSAGE_SCHEDULES_TARGET_INVALID)
        if source and not any(subjects_overlap(s, source) for s in stream_subjects):
            raise ApiError(Err.MESSAGE_SCHEDULES_SOURCE_INVALID)
        existing_rollup = hdr.get("Nats-Rollup") or ""
        if existing_rollup and existing_rollup != "sub":
            raise ApiError(Err.MESSAGE_SCHEDULES_ROLLUP_INVALID)
        due = found[0]
        add_rollup = not existing_rollup
    else:
        add_rollup = False
    next_value = hdr.get(NEXT)
    if next_value:
        if next_value != PURGE:
            raise ApiError(Err.MESSAGE_SCHEDULES_SCHEDULER_INVALID)
        scheduler = hdr.get(SCHEDULER) or ""
        if not scheduler or scheduler == subject or not _publish_subject(scheduler):
            raise ApiError(Err.MESSAGE_SCHEDULES_SCHEDULER_INVALID)
        if not allowed:
            raise ApiError(Err.MESSAGE_SCHEDULES_DISABLED)
        last = last_on(scheduler)
        if last is not None and not last.get(SCHEDULE):
            raise ApiError(Err.MESSAGE_SCHEDULES_SCHEDULER_INVALID)
    elif hdr.get(SCHEDULER):
        raise ApiError(Err.MESSAGE_SCHEDULES_SCHEDULER_INVALID)
    return Checked(due, add_rollup)


def _publish_subject(subject: str) -> bool:
    tokens = subject.split(".")
    return bool(subject) and all(t and t not in ("*", ">") and " " not in t for t in tokens)


def fire(
    schedule_subject: str,
    schedule: Headers,
    content: tuple[Headers, bytes],
    fired_ns: int,
    now_ns: int,
) -> tuple[str, bytes, bytes, int | None]:
    """The message a due schedule produces: (target, headers, payload, next due or
    None); `fired_ns` is the time it was due (the next one counts from it)."""
    pattern = schedule.get(SCHEDULE) or ""
    _zone_ok, zone = zone_of(schedule)
    found = next_due(pattern, fired_ns, now_ns, zone)
    if found is not None and pattern.startswith("@every ") and found[0] <= now_ns:
        found = (now_ns + (found[0] - fired_ns), True)
    repeat_at = found[0] if found is not None and found[1] else None
    source_hdr, payload = content
    dropped = ("Nats-Msg-Id", "Nats-TTL", "Nats-Rollup")
    items = [
        (k, v) for k, v in source_hdr.items
        if not k.startswith(("Nats-Schedule", "Nats-Expected-")) and k != SCHEDULER
        and k not in dropped
    ]
    items.append((SCHEDULER, schedule_subject))
    if repeat_at is None:
        items.append((NEXT, PURGE))
    else:
        items.append((NEXT, cron.format_rfc3339_nano(repeat_at, zone)))
    ttl = schedule.get(TTL)
    if ttl:
        items.append(("Nats-TTL", ttl))
    rollup = schedule.get(ROLLUP)
    if rollup:
        items.append(("Nats-Rollup", rollup))
    return schedule.get(TARGET) or "", encode_headers(items), payload, repeat_at


class Scheduler:
    """Due schedules of one stream: subject -> (sequence, due time), one timer."""

    def __init__(self, clock: Clock, run: Callable[[str, int, int], None]) -> None:
        self.clock = clock
        self.run = run  # (schedule subject, its sequence, when it was due)
        self.due: dict[str, tuple[int, int]] = {}
        self._timer: TimerHandle | None = None

    def add(self, subject: str, seq: int, due_ns: int) -> None:
        self.due[subject] = (seq, due_ns)
        self._arm()

    def remove(self, subject: str) -> None:
        if self.due.pop(subject, None) is not None:
            self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.due.clear()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.due:
            first = min(due for _seq, due in self.due.values())
            delay = max(first - self.clock.now_ns(), 0) / NS
            self._timer = self.clock.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        now = self.clock.now_ns()
        ready = sorted(
            (seq, subject, due) for subject, (seq, due) in self.due.items() if due <= now
        )
        for seq, subject, due in ready:
            self.due.pop(subject, None)
            self.run(subject, seq, due)
        self._arm()
