"""Counting matching messages when a subject filter is set (driver side).

With a filter, stream sequences overstate what a micro-batch holds (the
non-matching messages between them are not read), so the per-trigger limits
count matching messages instead:
- `count_matching(conn, stream, filters, start)`: matching messages after
  `start` up to the stream's end (the `num_pending` of a short-lived
  consumer).
- `nth_matching_seq(conn, stream, filters, start, n, target)`: the sequence of
  the n-th matching message after `start`, or `target` when fewer than n
  matching messages lie in (start, target]. It pulls at most n messages from
  a headers-only, ack-none consumer (no payloads travel; at most
  `PULL_BATCH` per request), so its cost is bounded by the limit itself.

Every consumer made here is ephemeral, in memory and deleted when done (or
expires after `INACTIVE_NS` if the connection broke). A work-queue stream
allows no such consumer: there both count stream sequences instead (an upper
bound of the matching messages), as without a filter.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, Final

from spark_jetstream.client import JetStreamApiError, LeanConnection, NatsError
from spark_jetstream.client.errors import WORKQUEUE_CONSUMER_ERRORS
from spark_jetstream.client.frames import ACK_PREFIX, parse_headers

PULL_BATCH: Final = 10_000
INACTIVE_NS: Final = 10_000_000_000


def _probe_config(name: str, filters: tuple[str, ...], start: int, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "name": name,
        "deliver_policy": "by_start_sequence",
        "opt_start_seq": start + 1,
        "ack_policy": "none",
        "mem_storage": True,
        "inactive_threshold": INACTIVE_NS,
        "num_replicas": 1,
        **extra,
    }
    if len(filters) == 1:
        config["filter_subject"] = filters[0]
    elif filters:
        config["filter_subjects"] = list(filters)
    return config


def _create(conn: LeanConnection, stream: str, config: dict[str, Any]) -> dict[str, Any]:
    name = config["name"]
    return conn.js_api(f"CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": config, "action": "create"})


def _delete(conn: LeanConnection, stream: str, name: str) -> None:
    try:
        conn.js_api(f"CONSUMER.DELETE.{stream}.{name}", retry=False)
    except (NatsError, OSError):
        pass  # expires on its own after INACTIVE_NS


def count_matching(
    conn: LeanConnection, stream: str, filters: tuple[str, ...], start: int, last_seq: int
) -> int:
    """Matching messages with seq > start (up to the stream's end, `last_seq`)."""
    name = "sjc_" + secrets.token_hex(8)
    try:
        created = _create(conn, stream, _probe_config(name, filters, start))
    except JetStreamApiError as exc:
        if exc.err_code not in WORKQUEUE_CONSUMER_ERRORS:
            raise
        return max(0, last_seq - start)
    _delete(conn, stream, name)
    return int(created.get("num_pending", 0))


def ack_reply_seq(reply: bytes) -> int:
    """The stream sequence in a `$JS.ACK.` reply subject (9-, 11- or 12-token layout)."""
    tokens = reply.split(b".")
    return int(tokens[-4] if len(tokens) in (9, 11) else tokens[-5])


def nth_matching_seq(
    conn: LeanConnection, stream: str, filters: tuple[str, ...], start: int, n: int, target: int
) -> int:
    """The sequence of the n-th matching message after `start`, capped at `target`."""
    if n <= 0 or target <= start:
        return start
    name = "sjn_" + secrets.token_hex(8)
    try:
        created = _create(conn, stream, _probe_config(name, filters, start, headers_only=True, max_waiting=4))
    except JetStreamApiError as exc:
        if exc.err_code not in WORKQUEUE_CONSUMER_ERRORS:
            raise
        return min(target, start + n)
    try:
        if int(created.get("num_pending", 0)) <= n:
            return target
        inbox = conn.new_inbox()
        sid = conn.subscribe(inbox)
        next_subject = conn.api_subject(f"CONSUMER.MSG.NEXT.{stream}.{name}")
        got, last = 0, start
        try:
            while got < n:
                want = min(PULL_BATCH, n - got)
                conn.publish(next_subject, json.dumps({"batch": want, "no_wait": True}).encode(), reply=inbox)
                received = 0
                while received < want:
                    _, _, _, reply, hdr, _ = conn.wait_for_sid(sid)
                    if not reply.startswith(ACK_PREFIX):
                        status = parse_headers(hdr)[0] if hdr else None
                        if status == 100:
                            continue  # heartbeat or flow control: not the end of the request
                        return target  # fewer matching messages than counted (deleted meanwhile)
                    received += 1
                    last = ack_reply_seq(reply)
                    if last >= target:
                        return target
                got += received
        finally:
            conn.unsubscribe(sid)
        return last
    finally:
        _delete(conn, stream, name)
