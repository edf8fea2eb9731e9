"""Mirroring Spark's committed offset into a durable JetStream consumer.

The Spark checkpoint is the source of truth; the durable consumer (option
`durable`) only mirrors it, so that server-side tools see the right lag and so
that a new query without a checkpoint can start where the last one stopped.

- `durable_ack_floor`: the consumer's ack floor stream sequence, or None when
  the consumer does not exist.
- `ensure_durable`: create it (pull, explicit acks, the source's filter)
  positioned after a given sequence; an existing consumer is left as is.
- `mirror_commit`: after Spark commits offset `end`, move the ack floor to
  `end` with `$JS.API.CONSUMER.RESET.<stream>.<durable>` and `{"seq": end+1}`
  (nats-server 2.14+, ADR-60): the reply is a consumer info with `reset_seq`
  = end+1 and `ack_floor.stream_seq` = end; `num_pending` counts what is left.
  RESET answers nothing at all for a missing consumer, hence the INFO first.

Retention (checked against nats-server 2.15.1):
- interest: RESET counts as acknowledgement; messages below the new floor
  that no other consumer still needs are removed by the server. Nothing more
  to do (purging here would take messages from other consumers). Read an
  interest stream with `durable`: without a consumer the stream keeps nothing
  and the source would see every message as lost.
- workqueue: RESET removes nothing. The commit then purges the range for the
  durable's filter subjects (`STREAM.PURGE` with `seq` = end+1 and `filter`),
  which removes what acking every message up to `end` would remove, in one
  call. Safe because work-queue consumers may not overlap.
"""

from __future__ import annotations

import logging
from typing import Any

from spark_jetstream.client import ErrorCode, JetStreamApiError, LeanConnection

log = logging.getLogger(__name__)

def consumer_info(conn: LeanConnection, stream: str, durable: str) -> dict[str, Any] | None:
    try:
        return conn.js_api(f"CONSUMER.INFO.{stream}.{durable}")
    except JetStreamApiError as exc:
        if exc.err_code == ErrorCode.CONSUMER_NOT_FOUND:
            return None
        raise


def durable_ack_floor(conn: LeanConnection, stream: str, durable: str) -> int | None:
    info = consumer_info(conn, stream, durable)
    if info is None:
        return None
    return int(info.get("ack_floor", {}).get("stream_seq", 0))


def durable_config(durable: str, subjects: tuple[str, ...], after_seq: int) -> dict[str, Any]:
    config: dict[str, Any] = {
        "durable_name": durable,
        "name": durable,
        "ack_policy": "explicit",
        "description": "progress of a spark-jetstream query (ack floor = committed offset)",
    }
    if after_seq <= 0:
        config["deliver_policy"] = "all"
    else:
        config["deliver_policy"] = "by_start_sequence"
        config["opt_start_seq"] = after_seq + 1
    if len(subjects) == 1:
        config["filter_subject"] = subjects[0]
    elif subjects:
        config["filter_subjects"] = list(subjects)
    return config


def ensure_durable(
    conn: LeanConnection, stream: str, durable: str, subjects: tuple[str, ...], after_seq: int
) -> dict[str, Any]:
    """The durable's info; created (positioned after `after_seq`) when missing."""
    info = consumer_info(conn, stream, durable)
    if info is not None:
        return info
    config = durable_config(durable, subjects, after_seq)
    log.info("creating durable consumer %s on stream %s after sequence %d", durable, stream, after_seq)
    return conn.js_api(
        f"CONSUMER.CREATE.{stream}.{durable}", {"stream_name": stream, "config": config, "action": "create"}
    )


def mirror_commit(
    conn: LeanConnection,
    stream: str,
    durable: str,
    subjects: tuple[str, ...],
    end: int,
    retention: str = "limits",
) -> dict[str, Any]:
    """Move the durable's ack floor to `end`; return the server's reply (consumer info)."""
    info = ensure_durable(conn, stream, durable, subjects, end)
    floor = int(info.get("ack_floor", {}).get("stream_seq", 0))
    reply = info
    if floor != end:
        reply = conn.js_api(f"CONSUMER.RESET.{stream}.{durable}", {"seq": end + 1})
        got = int(reply.get("ack_floor", {}).get("stream_seq", -1))
        if got != end:
            log.warning("durable %s on %s: ack floor is %d after reset to %d", durable, stream, got, end + 1)
    if retention == "workqueue" and end > 0:
        filters = subjects or (">",)
        for subject in filters:
            body: dict[str, Any] = {"seq": end + 1}
            if subject != ">":
                body["filter"] = subject
            purged = conn.js_api(f"STREAM.PURGE.{stream}", body)
            log.debug("stream %s: removed %s messages up to %d (%s)", stream, purged.get("purged"), end, subject)
    return reply
