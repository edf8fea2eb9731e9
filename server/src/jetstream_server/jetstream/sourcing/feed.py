"""One mirror or one source of a stream: where it reads next and how far behind it is.

A `Feed` belongs to a target stream and names an origin stream (which may
not exist yet: then it waits, `active` -1, as nats-server's does). `step()`
copies at most `budget` origin messages into the target through the
`ingest` callback and returns how many origin sequences it moved over.

Start (first time, nothing copied yet): `opt_start_seq`, else the first
sequence at or after `opt_start_time`, else the origin's beginning. After a
restart: a mirror continues after its own last sequence (a mirror keeps the
origin's sequences); a source after the sequence in the newest
`Nats-Stream-Source` header of its index name (a backward scan over the
target's messages, as nats-server's startingSequenceForSources) or the one
saved in `sources.json` (progress.py), whichever is later.

A recreated origin (its identity, the hash of its creation time, differs from
the one the source read, or that the newest stored source header names) is
read again from its start (or the configured start), as nats-server resets a
source whose consumer answers with a stream identity mismatch. A mirror keeps
going after its own last sequence: it takes the new origin's messages once
their sequences pass it, as nats-server's does.

An origin with interest or work-queue retention keeps a message until its
feeds have copied it (`holds`), then hears `acknowledged(seq)` as from an
AckNone consumer, so a work queue drained by a source empties.

Invariant: `next_seq` only moves forward past messages that were stored or
are not wanted (other subjects, duplicates); a refused store (limits) leaves
it where it was and sets `error`, so the next wake retries that message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from jetstream_server.core.subjects import filter_matches
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.sourcing.headers import (
    source_header,
    sourced_headers,
    stored_identity,
    stored_source,
    stream_identity,
)
from jetstream_server.jetstream.sourcing.progress import load_progress
from jetstream_server.jetstream.sourcing_config import SourceConfig
from jetstream_server.jetstream.stream import PubAck, Sourced, Stream
from jetstream_server.jetstream.transform import first_match
from jetstream_server.store.base import StoredMessage

logger = logging.getLogger(__name__)

Ingest = Callable[[Stream, str, bytes | None, bytes, Sourced], PubAck]

# How far back a source looks for its progress header before starting over
# from its configured start (bounded work when a stream is reopened).
PROGRESS_SCAN_LIMIT = 100_000


class Feed:
    """A mirror (`mirror=True`) or one source of a target stream."""

    def __init__(self, target: Stream, config: SourceConfig, *, mirror: bool, now_ns: int) -> None:
        self.target = target
        self.config = config
        self.mirror = mirror
        self.origin_name = config.name
        self.index_name = config.index_name
        self.filters = [f for f in config.filters if f != ">"]
        self.transforms = config.transforms()
        self.next_seq = 0  # 0: not positioned yet
        self.last_active_ns = 0
        self.created_ns = now_ns
        self.error: ApiError | None = None
        self.last_copied = 0  # origin sequence of the newest message copied
        self._identity = ""  # the identity of the origin this feed reads ("": not known)

    # -- positioning ---------------------------------------------------------------
    def position(self, origin: Stream, recreated: bool = False) -> None:
        """Choose where to read from, once (see module docstring)."""
        if self.next_seq:
            return
        resumed = 0 if recreated else self._resume_point()
        if resumed:
            self.next_seq = resumed
            return
        cfg = self.config
        target = self.target.store.state()
        # a source never starts before what its stream already holds (nats-server's
        # trySetupSourceConsumer); a mirror only uses its options when empty
        last_ts = target.last_ts_ns if target.last_seq and not self.mirror else 0
        if cfg.opt_start_seq > 0:
            self.next_seq = cfg.opt_start_seq
        elif cfg.opt_start_time_ns is not None:
            self.next_seq = max(origin.store.seq_for_time(max(cfg.opt_start_time_ns, last_ts)), 1)
        elif last_ts and target.first_seq > 1 and not recreated:
            self.next_seq = max(origin.store.seq_for_time(last_ts), 1)
        else:
            self.next_seq = max(origin.store.state().first_seq, 1)

    def _resume_point(self) -> int:
        store = self.target.store
        state = store.state()
        if self.mirror:
            return state.last_seq + 1 if state.last_seq else 0
        saved = load_progress(self.target.directory).get(self.index_name, 0)
        if saved:
            self.last_copied = saved
        scanned = self._scan_headers() if state.msgs else 0
        best = max(saved + 1 if saved else 0, scanned)
        return best

    def _scan_headers(self) -> int:
        store = self.target.store
        state = store.state()
        seq = state.last_seq
        for _ in range(PROGRESS_SCAN_LIMIT):
            msg = store.load_prev(seq)
            if msg is None:
                break
            found = stored_source(msg.headers)
            if found is not None and found[0] == self.index_name:
                self.last_copied = max(self.last_copied, found[1])
                self._identity = stored_identity(msg.headers)
                return found[1] + 1
            seq = msg.seq - 1
            if seq < state.first_seq:
                break
        return 0

    # -- copying -----------------------------------------------------------------------
    def step(self, origin: Stream, ingest: Ingest, budget: int, now_ns: int) -> int:
        """Copy up to `budget` messages; returns how many it handled (0: caught up
        or blocked)."""
        self.position(origin)
        identity = stream_identity(origin.created_ns)
        if not self.mirror and self._identity and self._identity != identity:
            logger.warning("stream %s: source stream %s was recreated, reading it from its start",
                           self.target.name, self.origin_name)
            self.next_seq = self.last_copied = 0
            self.position(origin, recreated=True)
        self._identity = identity
        self.last_active_ns = now_ns
        store = origin.store
        filters = self.filters or None
        done = 0
        while done < budget:
            msg = store.load_next(self.next_seq, filters)
            if msg is None:
                last = store.state().last_seq
                if last >= self.next_seq:
                    self.next_seq = last + 1  # nothing left that this feed wants
                break
            if not self._copy(msg, ingest):
                break
            self.last_copied = msg.seq
            self.next_seq = msg.seq + 1
            done += 1
            if origin.config.retention != "limits":
                # like an AckNone consumer's delivery: a work queue lets the message
                # go, interest retention once nobody else wants it
                origin.acknowledged(msg.seq)
        return done

    def holds(self, seq: int, subject: str) -> bool:
        """True while this feed still has to copy `seq` (interest retention of the origin)."""
        if self.next_seq and seq < self.next_seq:
            return False
        return not self.filters or any(filter_matches(f, subject) for f in self.filters)

    def _copy(self, msg: StoredMessage, ingest: Ingest) -> bool:
        subject = first_match(self.transforms, msg.subject) if self.transforms else msg.subject
        if self.mirror:
            ack = ingest(self.target, subject, msg.headers, msg.data,
                         Sourced(msg.seq, msg.timestamp_ns))
        else:
            headers = sourced_headers(msg.headers, source_header(self.index_name, msg.seq, msg.subject, self._identity))
            ack = ingest(self.target, subject, headers, msg.data, Sourced())
        if ack.error is not None:
            if self.error is None or self.error.description != ack.error.description:
                logger.warning("stream %s: copying %s message %d failed: %s",
                               self.target.name, self.origin_name, msg.seq, ack.error.description)
            self.error = ack.error
            return False
        self.error = None
        return True

    # -- info ------------------------------------------------------------------------------
    def lag(self, origin: Stream | None) -> int:
        if origin is None or not self.next_seq:
            return 0 if origin is None else origin.store.num_pending(1, self.filters or None)
        return origin.store.num_pending(self.next_seq, self.filters or None)

    def info(self, origin: Stream | None, now_ns: int) -> dict[str, Any]:
        """nats-server's StreamSourceInfo."""
        out: dict[str, Any] = {"name": self.origin_name}
        if self.config.external is not None:
            out["external"] = dict(self.config.external)
        out["lag"] = self.lag(origin)
        out["active"] = now_ns - self.last_active_ns if self.last_active_ns and origin is not None else -1
        error = self.error if origin is not None else ApiError(Err.STREAM_NOT_FOUND)
        if error is not None:
            out["error"] = error.to_json()
        if self.config.filter_subject:
            out["filter_subject"] = self.config.filter_subject
        if self.config.subject_transforms:
            out["subject_transforms"] = [t.to_json() for t in self.config.subject_transforms]
        if not self.mirror and self.last_copied:
            out["seq"] = self.last_copied  # nats-server 2.15 reports a source's progress
        return out
