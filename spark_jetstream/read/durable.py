"""Mirroring Spark's committed offset into a durable JetStream consumer (option `durable`).

The Spark checkpoint is the source of truth; the durable consumer only mirrors
it, so that server-side tools see the right lag and so that a new query without
a checkpoint can start where the last one stopped.

Ownership: the connector marks every consumer it creates with consumer
metadata: `spark_jetstream.owner` (the query's identity, a random token kept in
the query's offsets, hence in its checkpoint) and `spark_jetstream.start` (the
sequence the query started after: it read nothing at or below it).
- `claim_durable` (a query's start on a stream, no checkpointed position): a
  missing consumer is created, marked, positioned after the resolved start;
  an existing one must carry the mark and the query's subject filter, else
  `DurableOwnershipError` names it (a consumer of another application is
  never reset); a marked one is adopted (its owner becomes this query) and the
  query starts after its ack floor.
- `mirror_commit`: after Spark commits offset `end`, move the ack floor to
  `end` with `$JS.API.CONSUMER.RESET.<stream>.<durable>` and `{"seq": end+1}`
  (nats-server 2.14+, ADR-60). A consumer now owned by another query (two
  queries share the durable) or re-created with another filter is refused
  with `DurableOwnershipError`: mirroring would undo the other query's
  progress.

Retention (checked against nats-server 2.15.1):
- interest: RESET counts as acknowledgement; messages below the new floor
  that no other consumer still needs are removed by the server.
- workqueue: RESET removes nothing. The commit then purges the range for the
  durable's filter subjects (`STREAM.PURGE` with `seq` = end+1 and `filter`),
  which removes what acking every message up to `end` would remove, in one
  call, but only once the stream holds nothing at or below the query's start
  (first_seq > start): a purge never removes what the query did not read
  (a query started at `latest` leaves the older backlog alone).

Best effort (`MirrorGuard`): the mirror never fails the query for a server
error; the first failure logs a warning (naming nats-server 2.14+, which
RESET needs) and the mirror is retried at the next commit. Ownership
conflicts are not server errors: they fail the query.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from spark_jetstream.client import (
    ErrorCode,
    JetStreamApiError,
    LeanConnection,
    NatsError,
    NatsTimeoutError,
    NoRespondersError,
)

log = logging.getLogger(__name__)

OWNER_KEY: Final = "spark_jetstream.owner"
START_KEY: Final = "spark_jetstream.start"
RESET_NEEDS: Final = "nats-server 2.14+ (CONSUMER.RESET, ADR-60)"


class DurableOwnershipError(RuntimeError):
    """The durable consumer is not this query's to move."""


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


def durable_config(
    durable: str,
    subjects: tuple[str, ...],
    after_seq: int,
    owner: str = "",
    start: int | None = None,
    *,
    workqueue: bool = False,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "durable_name": durable,
        "name": durable,
        "ack_policy": "explicit",
        "description": "progress of a spark-jetstream query (ack floor = committed offset)",
        "metadata": {OWNER_KEY: owner, START_KEY: str(after_seq if start is None else start)},
    }
    if after_seq <= 0 or workqueue:  # work-queue consumers must deliver all (10101)
        config["deliver_policy"] = "all"
    else:
        config["deliver_policy"] = "by_start_sequence"
        config["opt_start_seq"] = after_seq + 1
    if len(subjects) == 1:
        config["filter_subject"] = subjects[0]
    elif subjects:
        config["filter_subjects"] = list(subjects)
    return config


def consumer_filters(config: dict[str, Any]) -> tuple[str, ...]:
    """The consumer's filter subjects, sorted; () for no filter."""
    subjects = list(config.get("filter_subjects") or ())
    if config.get("filter_subject"):
        subjects.append(str(config["filter_subject"]))
    return tuple(sorted(s for s in subjects if s != ">"))


def _create(conn: LeanConnection, stream: str, config: dict[str, Any], action: str) -> dict[str, Any]:
    name = config["durable_name"]
    return conn.js_api(f"CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": config, "action": action})


def check_ours(
    info: dict[str, Any], stream: str, durable: str, subjects: tuple[str, ...], *, unmarked_ok: bool = False
) -> dict[str, str]:
    """The consumer's metadata; raise unless the connector made it with this filter."""
    config = info.get("config", {})
    metadata = dict(config.get("metadata") or {})
    if OWNER_KEY not in metadata and not unmarked_ok:
        raise DurableOwnershipError(
            f"durable consumer {durable!r} on stream {stream!r} was not created by spark-jetstream "
            f"(no {OWNER_KEY} metadata): refusing to move it; choose another option durable or delete it"
        )
    have, want = consumer_filters(config), tuple(sorted(s for s in subjects if s != ">"))
    if have != want:
        raise DurableOwnershipError(
            f"durable consumer {durable!r} on stream {stream!r} filters {list(have) or 'all subjects'} but "
            f"this query reads {list(want) or 'all subjects'} (option subjects): refusing to move it; "
            "choose another option durable or delete it"
        )
    return metadata


def _adopt(
    conn: LeanConnection, stream: str, info: dict[str, Any], metadata: dict[str, str], owner: str
) -> dict[str, str]:
    """Mark the consumer as this query's (a config update of its metadata only)."""
    config = dict(info["config"])
    marked = {**metadata, OWNER_KEY: owner}
    marked.setdefault(START_KEY, str(info.get("ack_floor", {}).get("stream_seq", 0)))
    config["metadata"] = marked
    _create(conn, stream, config, "update")
    log.info("adopting durable consumer %s on stream %s (owner was %s)", config.get("name"), stream, metadata.get(OWNER_KEY))
    return marked


def claim_durable(
    conn: LeanConnection,
    stream: str,
    durable: str,
    subjects: tuple[str, ...],
    owner: str,
    resolve_start: Callable[[], int],
    retention: str = "limits",
) -> int:
    """At the query's start on `stream`: the sequence to start after (see the module doc)."""
    info = consumer_info(conn, stream, durable)
    if info is None:
        start = resolve_start()
        log.info("creating durable consumer %s on stream %s after sequence %d", durable, stream, start)
        workqueue = retention == "workqueue"
        _create(conn, stream, durable_config(durable, subjects, start, owner, workqueue=workqueue), "create")
        if workqueue and start > 0:  # delivers all: its ack floor moves to the start instead
            try:
                conn.js_api(f"CONSUMER.RESET.{stream}.{durable}", {"seq": start + 1}, retry=False)
            except NatsError as exc:  # best effort, as every mirror
                log.warning("durable %s on %s: could not move its ack floor to %d (%s; needs %s)",
                            durable, stream, start, exc, RESET_NEEDS)
        return start
    metadata = check_ours(info, stream, durable, subjects)
    floor = int(info.get("ack_floor", {}).get("stream_seq", 0))
    if metadata.get(OWNER_KEY) != owner:
        _adopt(conn, stream, info, metadata, owner)
    log.info("starting after the ack floor %d of durable %s on stream %s", floor, durable, stream)
    return floor


def mirror_commit(
    conn: LeanConnection,
    stream: str,
    durable: str,
    subjects: tuple[str, ...],
    end: int,
    *,
    owner: str,
    retention: str = "limits",
    first_seq: int = 0,
    adopt: bool = False,
) -> dict[str, Any]:
    """Move the durable's ack floor to `end`; return the server's reply (consumer info).

    `adopt`: the checkpoint predates ownership marks (or `durable` was added to
    it): take the consumer over (mark it) instead of refusing another owner.
    """
    info = consumer_info(conn, stream, durable)
    if info is None:  # deleted behind our back: re-created, marked; it read nothing below `end`
        config = durable_config(durable, subjects, end, owner, workqueue=retention == "workqueue")
        info = _create(conn, stream, config, "create")
    metadata = check_ours(info, stream, durable, subjects, unmarked_ok=adopt)
    if metadata.get(OWNER_KEY) != owner and adopt:
        metadata = _adopt(conn, stream, info, metadata, owner)
    elif metadata.get(OWNER_KEY) != owner:
        raise DurableOwnershipError(
            f"durable consumer {durable!r} on stream {stream!r} now belongs to another query "
            f"(owner {metadata.get(OWNER_KEY)}, this query {owner}): two queries share it; "
            "give each query its own option durable"
        )
    floor = int(info.get("ack_floor", {}).get("stream_seq", 0))
    reply = info
    if floor != end:
        reply = conn.js_api(f"CONSUMER.RESET.{stream}.{durable}", {"seq": end + 1}, retry=False)
        got = int(reply.get("ack_floor", {}).get("stream_seq", -1))
        if got != end:
            log.warning("durable %s on %s: ack floor is %d after reset to %d", durable, stream, got, end + 1)
    if retention == "workqueue" and end > 0:
        start = int(metadata.get(START_KEY, "0") or 0)
        if first_seq <= start:
            log.warning(
                "work-queue stream %s: messages at or below sequence %d (before this query's start) are "
                "still there; the committed range is not purged until they are gone", stream, start,
            )
            return reply
        for subject in subjects or (">",):
            body: dict[str, Any] = {"seq": end + 1}
            if subject != ">":
                body["filter"] = subject
            purged = conn.js_api(f"STREAM.PURGE.{stream}", body)
            log.debug("stream %s: removed %s messages up to %d (%s)", stream, purged.get("purged"), end, subject)
    return reply


class MirrorGuard:
    """Makes the mirror best effort: server errors become one warning, then debug lines.

    RESET is sent once per commit (no retries: a mirror never holds a
    micro-batch up for the retry budget). `NO_ANSWER_LIMIT` commits in a row
    whose request got no answer or no responder (a server without the RESET
    API, older than 2.14) turn the mirror off until the query restarts, so that
    no micro-batch waits for a timeout again; other errors are retried at the
    next commit.
    """

    NO_ANSWER_LIMIT: Final = 2

    def __init__(self) -> None:
        self.warned = False
        self.disabled = False
        self.no_answer = 0

    def run(self, what: str, server_version: str, fn: Callable[[], Any]) -> bool:
        if self.disabled:
            return False
        try:
            fn()
        except (NatsError, OSError) as exc:
            no_answer = isinstance(exc, (NatsTimeoutError, NoRespondersError))
            self.no_answer = self.no_answer + 1 if no_answer else 0
            self.disabled = self.no_answer >= self.NO_ANSWER_LIMIT
            log_at = logging.DEBUG if self.warned and not self.disabled else logging.WARNING
            self.warned = True
            log.log(
                log_at,
                "%s: the durable consumer does not mirror the committed offset (%s); it needs %s, the "
                "server reports version %s; the query continues (its checkpoint is the source of truth)%s",
                what, exc, RESET_NEEDS, server_version or "unknown",
                "; mirroring is off until the query restarts" if self.disabled else "",
            )
            return False
        self.no_answer = 0
        return True
