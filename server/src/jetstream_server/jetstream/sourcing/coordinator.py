"""Every mirror and source of the server: wake-ups, bounded copying, checks, info.

`Sourcing(streams, clock, ingest)` keeps one `Feed` per mirror and per source
of each stream (`attach(stream)` after create, update or reopen; `detach`
before delete). An origin that stores a message calls `origin_changed`
(wired to `Stream.on_appended`); the feeds reading it are marked and a
turn is scheduled with `clock.call_later(0, ...)`. A turn copies at most
`TURN_BUDGET` messages over all feeds and schedules the next turn while any
feed is still behind, so a big catch-up never holds the loop for long and a
publish never waits for its mirrors.

`check(config, streams, ignore)` raises the nats-server errors that need the
other streams: a mirror's `max_msg_size` below its origin's (10030), a
source's (10046), and cycles through sources and mirrors ("detected cycle");
Sources' progress goes to `sources.json` beside their stream (progress.py)
at most once a second and at shutdown. `inherit(config, streams)` gives a mirror its origin's `allow_direct` as
`mirror_direct`, as nats-server does.

Invariant: no feed of a deleted stream survives (`detach`), and a feed whose
origin is missing stays idle until a stream of that name appears. A feed
with `external` (another account or domain) is kept for the info but never
copies: this server has only its own streams.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.subjects import filters_overlap
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.sourcing.feed import Feed, Ingest
from jetstream_server.jetstream.sourcing.progress import save_progress
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import StreamConfig

logger = logging.getLogger(__name__)

TURN_BUDGET = 512
# How long a feed whose copy was refused waits before trying again.
RETRY_INTERVAL_S = 1.0
# How often the sources' progress is saved beside their stream (and at shutdown).
SAVE_INTERVAL_S = 1.0


class Sourcing:
    """The server's mirrors and sources (see module docstring)."""

    def __init__(self, streams: dict[str, Stream], clock: Clock, ingest: Ingest) -> None:
        self.streams = streams
        self.clock = clock
        self.ingest = ingest
        self.feeds: dict[str, list[Feed]] = {}  # target stream -> its feeds
        self._readers: dict[str, list[Feed]] = {}  # origin stream -> the feeds reading it
        self._dirty: set[int] = set()  # id() of feeds with work to do
        self._timer: TimerHandle | None = None
        self._save_timer: TimerHandle | None = None
        self._retry_timer: TimerHandle | None = None
        self._unsaved: set[str] = set()  # targets whose source progress is not on disk yet
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------
    def attach(self, stream: Stream) -> None:
        """(Re)build the feeds of `stream` from its config and start them."""
        old = {f.index_name: f for f in self.feeds.pop(stream.name, [])}
        stream.on_appended = self.origin_changed
        name = stream.name
        stream.held_by_readers = lambda seq, subject: self._held(name, seq, subject)
        cfg = stream.config
        now = self.clock.now_ns()
        feeds: list[Feed] = []
        if cfg.mirror is not None:
            keep = old.get(cfg.mirror.index_name)
            feeds.append(keep if keep is not None and keep.mirror else
                         Feed(stream, cfg.mirror, mirror=True, now_ns=now))
        for source in cfg.sources:
            keep = old.get(source.index_name)
            feeds.append(keep if keep is not None and not keep.mirror else
                         Feed(stream, source, mirror=False, now_ns=now))
        for feed in feeds:
            feed.target = stream
        if feeds:
            self.feeds[stream.name] = feeds
            stream.sourcing_info = lambda: self.info(stream)
        else:
            stream.sourcing_info = None
        self._index_readers()
        for feed in feeds:
            if feed.config.external is None:
                self._dirty.add(id(feed))
        if feeds:
            self._schedule()

    def detach(self, name: str) -> None:
        for feed in self.feeds.pop(name, []):
            self._dirty.discard(id(feed))
        self._index_readers()

    def close(self) -> None:
        self._closed = True
        for timer in (self._timer, self._save_timer, self._retry_timer):
            if timer is not None:
                timer.cancel()
        self._timer = self._save_timer = self._retry_timer = None
        self._save()

    # -- progress files ------------------------------------------------------------------------
    def _progress_changed(self, target: str) -> None:
        self._unsaved.add(target)
        if self._save_timer is None and not self._closed:
            self._save_timer = self.clock.call_later(SAVE_INTERVAL_S, self._save_from_timer)

    def _save_from_timer(self) -> None:
        self._save_timer = None
        self._save()

    def _save(self) -> None:
        unsaved, self._unsaved = self._unsaved, set()
        for name in unsaved:
            stream = self.streams.get(name)
            feeds = [f for f in self.feeds.get(name, []) if not f.mirror and f.last_copied]
            if stream is not None and feeds:
                save_progress(stream.directory, {f.index_name: f.last_copied for f in feeds})

    # -- wake-ups and turns ----------------------------------------------------------------
    def origin_changed(self, origin: Stream) -> None:
        """`origin` stored a message: the feeds reading it have work."""
        readers = self._readers.get(origin.name)
        if readers:
            self._dirty.update(id(feed) for feed in readers)
            self._schedule()

    def _held(self, origin: str, seq: int, subject: str) -> bool:
        return any(feed.holds(seq, subject) for feed in self._readers.get(origin, ()))

    def _index_readers(self) -> None:
        readers: dict[str, list[Feed]] = {}
        for feeds in self.feeds.values():
            for feed in feeds:
                if feed.config.external is None:  # other domains and accounts are not reachable here
                    readers.setdefault(feed.origin_name, []).append(feed)
        self._readers = readers

    def _schedule(self) -> None:
        if self._timer is None and not self._closed:
            self._timer = self.clock.call_later(0, self._turn)

    def _turn(self) -> None:
        self._timer = None
        if self._closed:
            return
        budget = TURN_BUDGET
        now = self.clock.now_ns()
        for feeds in list(self.feeds.values()):
            for feed in feeds:
                if id(feed) not in self._dirty or budget <= 0:
                    continue
                origin = self.streams.get(feed.origin_name)
                target = self.streams.get(feed.target.name)
                if origin is None or target is not feed.target or target.closed:
                    self._dirty.discard(id(feed))
                    continue
                try:
                    done = feed.step(origin, self.ingest, budget, now)
                except Exception:  # one broken feed must not stop the others
                    logger.exception("stream %s: copying from %s failed", target.name, origin.name)
                    self._dirty.discard(id(feed))
                    continue
                budget -= done
                if done and not feed.mirror:
                    self._progress_changed(target.name)
                if done == 0 or feed.error is not None:
                    self._dirty.discard(id(feed))
                if feed.error is not None:
                    self._retry_later()
        if self._dirty:
            self._schedule()

    def _retry_later(self) -> None:
        """A refused copy (the target's limits) is tried again after a pause,
        even when the origin gets nothing new."""
        if self._retry_timer is None and not self._closed:
            self._retry_timer = self.clock.call_later(RETRY_INTERVAL_S, self._retry)

    def _retry(self) -> None:
        self._retry_timer = None
        failed = [f for feeds in self.feeds.values() for f in feeds if f.error is not None]
        if failed:
            self._dirty.update(id(f) for f in failed)
            self._schedule()

    def stream_created(self, stream: Stream) -> None:
        """A new stream may be the origin some feeds were waiting for."""
        self.origin_changed(stream)

    # -- info ------------------------------------------------------------------------------------
    def info(self, stream: Stream) -> dict[str, Any]:
        """`mirror` and `sources` for the stream info answer."""
        now = self.clock.now_ns()
        out: dict[str, Any] = {}
        sources = []
        for feed in self.feeds.get(stream.name, []):
            origin = self.streams.get(feed.origin_name) if feed.config.external is None else None
            if origin is not None:
                feed.last_active_ns = now  # same process: the origin is always in reach
            body = feed.info(origin, now)
            if feed.mirror:
                out["mirror"] = body
            else:
                sources.append(body)
        if sources:
            out["sources"] = sources
        return out

    # -- checks needing the other streams ------------------------------------------------------------
    @staticmethod
    def inherit(config: StreamConfig, streams: dict[str, Stream]) -> StreamConfig:
        """A mirror's `mirror_direct` follows its origin's `allow_direct` when the origin exists."""
        if config.mirror is None or config.mirror.external is not None:
            return config
        origin = streams.get(config.mirror.name)
        if origin is None or origin.config.allow_direct == config.mirror_direct:
            return config
        return dataclasses.replace(config, mirror_direct=origin.config.allow_direct)

    @staticmethod
    def check(config: StreamConfig, streams: dict[str, Stream]) -> None:
        def origin_config(name: str) -> StreamConfig | None:
            if name == config.name:
                return config
            stream = streams.get(name)
            return None if stream is None else stream.config

        mirror = config.mirror
        if mirror is not None and mirror.external is None:
            origin = origin_config(mirror.name)
            if (origin is not None and config.max_msg_size > 0 and origin.max_msg_size > 0
                    and config.max_msg_size < origin.max_msg_size):
                raise ApiError(Err.MIRROR_MAX_MESSAGE_SIZE_TOO_BIG)
        for source in config.sources:
            if source.external is not None:
                continue
            origin = origin_config(source.name)
            if (origin is not None and config.max_msg_size > 0 and origin.max_msg_size > 0
                    and config.max_msg_size < origin.max_msg_size):
                raise ApiError(Err.SOURCE_MAX_MESSAGE_SIZE_TOO_BIG)
        _check_cycles(config, origin_config)


def _check_cycles(config: StreamConfig, lookup: Callable[[str], StreamConfig | None]) -> None:
    """nats-server's cycle walk over sources and mirrors (checkStreamCfg)."""
    to_visit = [config]
    visited: set[str] = set()
    while to_visit:
        cfg = to_visit.pop(0)
        visited.add(cfg.name)
        for source in cfg.sources:
            if source.external is not None:
                continue
            if source.name in visited:
                if not source.filter_subject or any(
                    filters_overlap(subject, source.filter_subject) for subject in cfg.subjects
                ):
                    raise ApiError(Err.STREAM_INVALID_CONFIG, err="detected cycle")
            else:
                found = lookup(source.name) if source.name != config.name else None
                if found is not None:
                    to_visit.append(found)
        mirror = cfg.mirror
        if mirror is not None and mirror.external is None:
            if mirror.name in visited:
                raise ApiError(Err.STREAM_INVALID_CONFIG, err="detected cycle")
            found = lookup(mirror.name) if mirror.name != config.name else None
            if found is not None:
                to_visit.append(found)
