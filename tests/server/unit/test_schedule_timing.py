"""Message schedules (jetstream/schedules.py) on a stream with a fake clock: when a
schedule fires, what it produces, repeating and one-shot schedules."""

from __future__ import annotations

from datetime import datetime, timezone

from jetstream_server.core.clock import FakeClock
from jetstream_server.core.headers import encode_headers, parse_headers
from jetstream_server.jetstream.schedules import next_due
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import StreamConfig
from jetstream_server.store.memory import MemoryStore

NS = 1_000_000_000


def _stream() -> tuple[Stream, FakeClock]:
    clock = FakeClock(start_ns=1_800_000_000 * NS)
    config = StreamConfig.from_json({"name": "S", "subjects": ["s.>"], "allow_msg_schedules": True})
    return Stream(config, MemoryStore(), clock), clock


def _at(ns: int) -> str:
    return datetime.fromtimestamp(ns // NS, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _subjects(stream: Stream) -> dict[str, int]:
    return {name: info.msgs for name, info in stream.store.subjects(None).items()}


def test_at_fires_once_when_due_and_purges_the_schedule() -> None:
    stream, clock = _stream()
    due = clock.now_ns() + 30 * NS
    ack = stream.accept("s.sched", encode_headers(
        {"Nats-Schedule": f"@at {_at(due)}", "Nats-Schedule-Target": "s.out", "Id": "7"}), b"hi")
    assert ack.error is None
    stored = stream.store.load(ack.seq)
    assert stored is not None and b"Nats-Rollup: sub\r\n" in (stored.headers or b"")
    clock.advance(29)
    assert _subjects(stream) == {"s.sched": 1}
    clock.advance(1)
    assert _subjects(stream) == {"s.out": 1}
    produced = stream.store.load_last("s.out")
    assert produced is not None and produced.data == b"hi"
    headers = parse_headers(produced.headers or b"")
    assert headers.items == [("Id", "7"), ("Nats-Scheduler", "s.sched"),
                             ("Nats-Schedule-Next", "purge")]
    clock.advance(3600)
    assert _subjects(stream) == {"s.out": 1}


def test_every_repeats_from_the_latest_schedule() -> None:
    stream, clock = _stream()
    stream.accept("s.tick", encode_headers(
        {"Nats-Schedule": "@every 10s", "Nats-Schedule-Target": "s.out"}), b"")
    clock.advance(10)
    clock.advance(10)
    assert _subjects(stream) == {"s.tick": 1, "s.out": 2}
    last = stream.store.load_last("s.out")
    assert last is not None
    assert parse_headers(last.headers or b"").get("Nats-Schedule-Next") == _at(clock.now_ns() + 10 * NS)
    # a new schedule on the subject replaces the old one (rollup), with its own period
    stream.accept("s.tick", encode_headers(
        {"Nats-Schedule": "@every 1m", "Nats-Schedule-Target": "s.other"}), b"")
    clock.advance(30)
    assert _subjects(stream) == {"s.tick": 1, "s.out": 2}
    clock.advance(30)
    assert _subjects(stream) == {"s.tick": 1, "s.out": 2, "s.other": 1}
    stream.stop()
    assert clock.pending_timers == 0


def test_patterns() -> None:
    now = 1_800_000_000 * NS
    assert next_due("@at 2027-01-15T10:00:00.5+01:00", now, now) == (
        int(datetime(2027, 1, 15, 9, tzinfo=timezone.utc).timestamp()) * NS + NS // 2, False)
    assert next_due("@every 1m30s", now, now) == (now + 90 * NS, True)
    assert next_due("@every 1m", now - 3600 * NS, now) == (now + 60 * NS, True)  # no catch-up
    # 1_800_000_000 is 2027-01-15T08:00:00Z
    assert next_due("0 0 * * * *", now, now) == (now + 3600 * NS, True)
    assert next_due("@hourly", now - 86400 * NS, now) == (now + 3600 * NS, True)  # no catch-up
    assert next_due("@every 1.5s", now + NS // 2, now) == (now + 5 * NS // 2, True)  # rounds up
    for bad in ("@every 999ms", "@every 1d", "@at tomorrow", "0 0 * * *", "@hour", ""):
        assert next_due(bad, now, now) is None, bad


def test_a_cron_schedule_in_a_zone_names_its_next_time_in_that_zone() -> None:
    stream, clock = _stream()  # 2027-01-15T08:00:00Z
    stream.accept("s.tick", encode_headers(
        {"Nats-Schedule": "0 30 * * * *", "Nats-Schedule-Time-Zone": "Asia/Kolkata",
         "Nats-Schedule-Target": "s.out"}), b"")
    clock.advance(29 * 60 + 59)
    assert _subjects(stream) == {"s.tick": 1}
    clock.advance(1)  # 08:30Z is 14:00 in Kolkata: not yet
    assert _subjects(stream) == {"s.tick": 1}
    clock.advance(30 * 60)  # 09:00Z is 14:30 in Kolkata
    assert _subjects(stream) == {"s.tick": 1, "s.out": 1}
    last = stream.store.load_last("s.out")
    assert last is not None
    assert parse_headers(last.headers or b"").get("Nats-Schedule-Next") == "2027-01-15T15:30:00+05:30"
    stream.stop()
