"""Driver-side checks of the sink's target, before anything is published.

`check_target` asks the server (JetStream API over a `LeanConnection`):
- with the `stream` option: the stream exists (`STREAM.INFO`), and, with the
  `subject` option, the subject is captured by exactly that stream
  (`STREAM.NAMES` with `{"subject": ...}`);
- with only the `subject` option: some stream captures the subject;
- with neither (subjects from the `subject` column): nothing can be checked
  up front; each publish still fails on its own if no stream captures it.
Then the dedup window: the target stream's `duplicate_window` must be at
least `dedupWindowCheck`; shorter logs a warning (`dedupWindowCheckMode=warn`)
or raises `TargetError` (`fail`), because a replay older than the window
would be stored twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spark_jetstream.client import ErrorCode, JetStreamApiError, LeanConnection, NatsError
from spark_jetstream.client import connect as connect_pooled
from spark_jetstream.options import ConnectionOptions, WriteOptions
from spark_jetstream.options.grammar import format_duration_ns

log = logging.getLogger(__name__)

class TargetError(ValueError):
    """The sink's target is missing or unsuitable; the text names the stream or subject."""


@dataclass(frozen=True, slots=True)
class TargetInfo:
    stream: str | None
    duplicate_window_ns: int | None
    warning: str | None = None


def _stream_names(conn: LeanConnection, subject: str) -> list[str]:
    names: list[str] = []
    offset = 0
    while True:
        reply = conn.js_api("STREAM.NAMES", {"subject": subject, "offset": offset})
        page = reply.get("streams") or []
        names.extend(page)
        offset += len(page)
        if not page or offset >= int(reply.get("total", 0)):
            return names


def _stream_info(conn: LeanConnection, stream: str) -> dict[str, Any]:
    try:
        return conn.js_api(f"STREAM.INFO.{stream}")
    except JetStreamApiError as exc:
        if exc.err_code == ErrorCode.STREAM_NOT_FOUND:
            raise TargetError(
                f"option stream: stream {stream!r} not found on {conn.server_url}"
            ) from None
        raise


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


def check_target(
    options: WriteOptions,
    connect: Callable[[ConnectionOptions], LeanConnection] = connect_pooled,
) -> TargetInfo:
    try:
        conn = connect(options.connection)
    except (NatsError, OSError) as exc:
        raise TargetError(
            f"jetstream sink: cannot connect to {options.connection.display_servers}: {exc}"
        ) from exc
    with conn:
        stream = options.stream
        subject = options.subject
        if stream is not None:
            info = _stream_info(conn, stream)
            if subject is not None:
                owners = _stream_names(conn, subject)
                if stream not in owners:
                    by = f"stream {owners[0]!r}" if owners else "no stream"
                    raise TargetError(
                        f"option subject: {subject!r} is not captured by stream {stream!r} "
                        f"(it is captured by {by})"
                    )
        elif subject is not None:
            owners = _stream_names(conn, subject)
            if not owners:
                raise TargetError(
                    f"option subject: no stream captures subject {subject!r} on {conn.server_url}"
                )
            stream = owners[0]
            info = _stream_info(conn, stream)
        else:
            log.info("jetstream sink: subjects come from the subject column; target not checked")
            return TargetInfo(stream=None, duplicate_window_ns=None)
    window_ns = int((info.get("config") or {}).get("duplicate_window", 0))
    problem = dedup_window_problem(stream, window_ns, options)
    if problem is not None:
        if options.dedup_window_check_mode == "fail":
            raise TargetError(problem + " (dedupWindowCheckMode=fail)")
        log.warning("jetstream sink: %s", problem)
    return TargetInfo(stream=stream, duplicate_window_ns=window_ns, warning=problem)
