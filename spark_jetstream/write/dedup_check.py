"""The driver's check of the dedup window of every stream the sink wrote to.

Exactly-once rests on the target stream dropping a replayed message whose
`Nats-Msg-Id` it has seen; it only remembers ids for `duplicate_window`. A
replay later than that (a query restarted after a longer outage, a task retried
after a long stall) is stored twice. So each stream's window must be at least
`dedupWindowCheck`.

Which streams: the ones the pub acks named (the tasks report them in their
commit messages, sink_task.py), so subjects taken from a column are covered
as well as the `subject` / `stream` options. When: at the commit of a write
or micro-batch, on the driver; never in a constructor (Spark builds writers
on the driver for planning and again for each commit: no I/O there).

`check_windows` asks `STREAM.INFO` once per stream and connection options in
this process and caches the window. A server that cannot be reached or a
request that fails is logged and asked again at the next commit: a brief
outage never fails a query here. A too short window logs one warning per
stream (`dedupWindowCheckMode=warn`) or raises `TargetError` at every commit
(`fail`): the write or micro-batch fails after its tasks published, what they
published stays, and a replay of the micro-batch is deduplicated.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from spark_jetstream.client import JetStreamApiError, LeanConnection, NatsError
from spark_jetstream.client import connect as connect_pooled
from spark_jetstream.options import ConnectionOptions, WriteOptions
from spark_jetstream.options.grammar import format_duration_ns

log = logging.getLogger(__name__)

_lock = threading.Lock()
# (connection options, stream) -> duplicate_window in ns, for the life of the process
_windows: dict[tuple[ConnectionOptions, str], int] = {}
_warned: set[tuple[ConnectionOptions, str]] = set()


class TargetError(ValueError):
    """The sink's target is unsuitable; the text names the stream."""


def dedup_window_problem(stream: str, window_ns: int, options: WriteOptions) -> str | None:
    """The warning text when `window_ns` is shorter than `dedupWindowCheck`, else None."""
    wanted = options.dedup_window_check_ns
    if wanted <= 0 or window_ns >= wanted:
        return None
    return (
        f"stream {stream!r} has duplicate_window {format_duration_ns(window_ns)}, shorter than "
        f"dedupWindowCheck={format_duration_ns(wanted)}: a batch replayed after more than "
        f"{format_duration_ns(window_ns)} would be stored twice; raise the stream's "
        "duplicate_window or lower dedupWindowCheck"
    )


def _fetch_windows(
    options: WriteOptions,
    streams: list[str],
    connect: Callable[[ConnectionOptions], LeanConnection],
) -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        conn = connect(options.connection)
    except (NatsError, OSError) as exc:
        log.warning(
            "jetstream sink: cannot check the dedup window of %s on %s (%s); checked again at the "
            "next commit",
            ", ".join(streams),
            options.connection.display_servers,
            exc,
        )
        return found
    with conn:
        for stream in streams:
            try:
                info = conn.js_api(f"STREAM.INFO.{stream}")
            except (JetStreamApiError, NatsError, OSError) as exc:
                log.warning(
                    "jetstream sink: cannot check the dedup window of stream %r (%s); checked "
                    "again at the next commit",
                    stream,
                    exc,
                )
                continue
            found[stream] = int((info.get("config") or {}).get("duplicate_window", 0))
    return found


def check_windows(
    options: WriteOptions,
    streams: Iterable[str],
    connect: Callable[[ConnectionOptions], LeanConnection] = connect_pooled,
) -> list[str]:
    """Check the dedup window of each of `streams`; return the problems found (warn mode)."""
    if options.dedup_window_check_ns <= 0:
        return []
    wanted = sorted(set(streams))
    key = options.connection
    with _lock:
        todo = [s for s in wanted if (key, s) not in _windows]
    if todo:
        found = _fetch_windows(options, todo, connect)
        with _lock:
            _windows.update(((key, s), w) for s, w in found.items())
    problems: list[tuple[str, str]] = []
    with _lock:
        for stream in wanted:
            window = _windows.get((key, stream))
            problem = None if window is None else dedup_window_problem(stream, window, options)
            if problem is not None:
                problems.append((stream, problem))
    if problems and options.dedup_window_check_mode == "fail":
        raise TargetError("; ".join(p for _, p in problems) + " (dedupWindowCheckMode=fail)")
    for stream, problem in problems:
        with _lock:
            first = (key, stream) not in _warned
            _warned.add((key, stream))
        if first:
            log.warning("jetstream sink: %s", problem)
    return [p for _, p in problems]


def forget_windows() -> None:
    """Drop the cached windows (a test that changes a stream's window between writes)."""
    with _lock:
        _windows.clear()
        _warned.clear()
