"""The publish pipeline: store, hold for the group commit, sync, answer, deliver, in publish order.

Every message a stream stores comes through here: a client's publish (from
intake.py), each message of a fast batch (fast_batch.py) and of a committed
atomic batch (atomic_batch.py), and what mirrors and sources copy
(sourcing/). `ingest` stores one message with the stream's checks
(`accept`: every failure becomes an error pub ack, logged, never raised) and
`settle` decides what happens to its pub ack:

- with `sync_always` (and not `persist_mode: async`), the ack is *held*: a
  `HeldAck` joins the group of this loop turn and its stream is marked dirty;
  a flush scheduled with `clock.call_later(0, ...)` syncs every dirty store
  once (group commit), then answers the held acks in publish order. The
  fsyncs run off the loop (`clock.run_off_loop`: the disk thread; FakeClock
  runs them inline): the stores hand them over with `begin_sync()`, the loop
  keeps serving, and the acks go out when the disk thread is done. One group
  is in flight at a time; publishes arriving meanwhile form the next group.
  A refused publish is held too while a group waits, so answers never
  overtake each other;
- otherwise the ack is answered at once and a periodic sync (every
  `sync_interval_s`, on the disk thread too) makes the stores durable.

Answering a pub ack (`_answer`): the stream's republish goes out first (as
nats-server), then either the pub ack to `reply` (pub_ack.py's JSON; none
without a reply or on a `no_ack` stream) or, for a message whose publisher
is a batch, its `on_persisted` callback; then the stream's listeners hear of
the message (consumers deliver it). `on_persisted` is called once for each
message the stream stored, with its pub ack, or with an error pub ack when
its sync failed; never for a message the stream refused (`ingest` returned
that ack already).

Invariants: a publisher hears "stored" only after the message is in the
store, and with `sync_always` only after its fsync; a failed sync answers
every ack of its stream in the group with 10077 and marks the store
(`sync_failed`); acks go out in the order the messages were published; a
deleted stream's held acks are dropped with it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.router import Router
from jetstream_server.jetstream.errors import ApiError, Err, client_reason
from jetstream_server.jetstream.pub_ack import PubAckEncoder
from jetstream_server.jetstream.router_host import NO_ROUTER
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.jetstream.stream import PubAck, Sourced, Stream
from jetstream_server.store.base import StoreError

logger = logging.getLogger(__name__)

Persisted = Callable[[PubAck], None]
SyncJobs = list[tuple[Stream, Callable[[], None]]]


@dataclass(slots=True)
class HeldAck:
    """A pub ack waiting for its group commit."""

    stream: Stream
    reply: str | None  # where the pub ack goes (None: nowhere, e.g. a batch message)
    ack: PubAck  # replaced by an error ack when the sync fails
    on_persisted: Persisted | None = None  # set only for a message the stream stored


class PublishPipeline:
    """Stores, holds, syncs and answers published messages (see module docstring)."""

    def __init__(
        self, settings: EngineSettings, clock: Clock, streams: Mapping[str, Stream]
    ) -> None:
        self.clock = clock
        self.streams = streams
        self.sync_always = settings.sync_always
        self.sync_interval_s = settings.sync_interval_s
        self.acks = PubAckEncoder(settings.domain)
        self.router: Router = NO_ROUTER
        self._publish = self.router.publish
        self._held: list[HeldAck] = []
        self._dirty: set[str] = set()  # streams with held messages to sync
        self._flush_timer: TimerHandle | None = None
        self._syncing = False  # a group commit's fsyncs are on the disk thread
        self._sync_timer: TimerHandle | None = None
        self._running = False

    def start(self, router: Router) -> None:
        """Answer through `router` and start the periodic sync (with `sync_always`
        too: streams with `persist_mode: async` rely on it)."""
        self.router = router
        self._publish = router.publish
        self._running = True
        self._arm_sync_timer()

    def close(self) -> None:
        """Answer what is held (synced inline) and stop the timers."""
        self._running = False
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        self.flush(inline=True)
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None

    def drop_stream(self, stream: Stream) -> None:
        """`stream` was deleted: its held acks go with it."""
        self._held = [held for held in self._held if held.stream is not stream]

    # -- storing ---------------------------------------------------------------------
    def ingest(
        self,
        stream: Stream,
        subject: str,
        reply: str | None,
        headers: bytes | None,
        payload: bytes,
        sourced: Sourced | None = None,
        on_persisted: Persisted | None = None,
    ) -> PubAck:
        """Store one message, then answer (after the group commit with
        `sync_always`); returns its pub ack as stored or refused."""
        ack = self.accept(stream, subject, headers, payload, sourced)
        self.settle(stream, reply, ack, on_persisted)
        return ack

    def ingest_sourced(
        self, stream: Stream, subject: str, headers: bytes | None, payload: bytes, sourced: Sourced
    ) -> PubAck:
        """A message a mirror or source copies in (no publisher to answer)."""
        return self.ingest(stream, subject, None, headers, payload, sourced)

    def accept(
        self,
        stream: Stream,
        subject: str,
        headers: bytes | None,
        payload: bytes,
        sourced: Sourced | None = None,
    ) -> PubAck:
        """`stream.accept` (checks and store, listeners not told) with every
        failure as an error pub ack: a store failure answers the publisher and
        the server keeps going."""
        try:
            if not subject.isascii() and not _is_utf8(subject):
                # bytes that are not UTF-8 (kept as surrogates) cannot be stored or
                # shown in API replies; refused with one log line, not a traceback
                logger.info("stream %s: publish subject %r is not UTF-8: refused", stream.name, subject)
                raise ApiError(Err.STREAM_STORE_FAILED, err="subject is not valid UTF-8")
            return stream.accept(subject, headers, payload, sourced)
        except ApiError as exc:
            return PubAck(0, error=exc)
        except (StoreError, OSError) as exc:  # disk full, sequence space: expected, one line
            logger.error("stream %s: storing a message on %s failed: %s", stream.name, subject, exc)
            return PubAck(seq=0, error=ApiError(Err.STREAM_STORE_FAILED, err=client_reason(exc)))
        except Exception as exc:  # a store failure answers the publisher, the server keeps going
            logger.exception("stream %s: storing a message on %s failed", stream.name, subject)
            return PubAck(seq=0, error=ApiError(Err.STREAM_STORE_FAILED, err=str(exc)))

    # -- answering -------------------------------------------------------------------
    def settle(
        self, stream: Stream, reply: str | None, ack: PubAck, on_persisted: Persisted | None = None
    ) -> None:
        """Answer `ack` now, or hold it for the group commit (module docstring)."""
        if ack.msg is None:
            on_persisted = None  # refused: the batch heard it from `ingest`
        if self.sync_always and (ack.msg is not None or self._held) and (
            not stream.config.async_persist  # persist_mode async: acked before its sync
        ):
            self._held.append(HeldAck(stream, reply, ack, on_persisted))
            if ack.msg is not None:
                self._dirty.add(stream.name)
            if self._flush_timer is None:
                self._flush_timer = self.clock.call_later(0, self._flush_from_timer)
            return
        self._answer(stream, reply, ack, on_persisted)

    def _answer(
        self, stream: Stream, reply: str | None, ack: PubAck, on_persisted: Persisted | None
    ) -> None:
        if ack.republish is not None:  # as nats-server: the republish goes out before the ack
            self._publish(ack.republish[0], None, ack.republish[1], ack.republish[2])
        if on_persisted is not None:
            on_persisted(ack)
        elif reply and not stream.config.no_ack:
            self._publish(reply, None, None, self.acks.encode(stream, ack))
        if ack.msg is not None and not stream.closed:
            stream.deliver(ack.msg)

    def send_ack(self, stream: Stream, reply: str | None, ack: PubAck) -> None:
        """A pub ack that waits for nothing (a refusal), unless there is no reply
        or the stream is `no_ack`."""
        if reply and not stream.config.no_ack:
            self._publish(reply, None, None, self.acks.encode(stream, ack))

    def send(self, reply: str, body: bytes) -> None:
        """A raw answer (a batch's flow control, an empty staged ack)."""
        self._publish(reply, None, None, body)

    # -- group commit ----------------------------------------------------------------
    def _flush_from_timer(self) -> None:
        self._flush_timer = None
        self.flush()

    def flush(self, *, inline: bool = False) -> None:
        """Group commit: one sync per dirty store, then the held acks in order.
        The fsyncs run off the loop unless `inline` (closing)."""
        if self._syncing and not inline:
            return  # the group in flight flushes the next one when it is done
        held, self._held = self._held, []
        dirty, self._dirty = self._dirty, set()
        jobs: SyncJobs = []
        failed: dict[str, BaseException] = {}
        for name in dirty:
            stream = self.streams.get(name)
            if stream is None:
                continue
            try:
                job = stream.store.begin_sync()
            except Exception as exc:  # the messages are not durable: tell their publishers
                failed[name] = exc
                continue
            if job is not None:
                jobs.append((stream, job))
        if not jobs or inline:
            failed.update(_run_sync_jobs(jobs))
            self._answer_held(held, failed)
            return
        self._syncing = True

        def synced(result: object) -> None:
            self._syncing = False
            if isinstance(result, dict):
                failed.update(result)
            else:  # the runner itself failed
                failed.update({stream.name: _as_error(result) for stream, _ in jobs})
            self._answer_held(held, failed)
            if self._held and self._flush_timer is None:
                self._flush_timer = self.clock.call_later(0, self._flush_from_timer)

        self.clock.run_off_loop(functools.partial(_run_sync_jobs, jobs), synced)

    def _answer_held(self, held: list[HeldAck], failed: dict[str, BaseException]) -> None:
        for name, exc in failed.items():
            logger.error("stream %s: sync failed: %s", name, exc)
            stream = self.streams.get(name)
            if stream is not None and not stream.closed:
                stream.store.sync_failed()
            error = PubAck(seq=0, error=ApiError(Err.STREAM_STORE_FAILED, err=client_reason(exc)))
            for entry in held:
                if entry.stream.name == name:
                    entry.ack = error
        for entry in held:
            self._answer(entry.stream, entry.reply, entry.ack, entry.on_persisted)

    # -- periodic sync ---------------------------------------------------------------
    def _arm_sync_timer(self) -> None:
        self._sync_timer = self.clock.call_later(self.sync_interval_s, self._periodic_sync)

    def _periodic_sync(self) -> None:
        self._sync_timer = None
        jobs: SyncJobs = []
        for stream in list(self.streams.values()):
            try:
                job = stream.store.begin_sync()
            except Exception:  # keep syncing the others and try again next interval
                logger.exception("stream %s: periodic sync failed", stream.name)
                continue
            if job is not None:
                jobs.append((stream, job))
        if jobs:
            self.clock.run_off_loop(functools.partial(_run_sync_jobs, jobs), self._periodic_synced)
        if self._running:
            self._arm_sync_timer()

    def _periodic_synced(self, result: object) -> None:
        if not isinstance(result, dict):
            logger.error("periodic sync failed: %s", result)
            return
        for name, exc in result.items():
            logger.error("stream %s: periodic sync failed: %s", name, exc)
            stream = self.streams.get(name)
            if stream is not None and not stream.closed:
                stream.store.sync_failed()


def _run_sync_jobs(jobs: SyncJobs) -> dict[str, BaseException]:
    """Run `begin_sync()` jobs (any thread); the failures by stream name."""
    failed: dict[str, BaseException] = {}
    for stream, job in jobs:
        try:
            job()
        except Exception as exc:  # reported per stream on the loop thread
            failed[stream.name] = exc
    return failed


def _as_error(result: object) -> BaseException:
    return result if isinstance(result, BaseException) else RuntimeError(repr(result))


def _is_utf8(text: str) -> bool:
    """False when `text` holds bytes that were not UTF-8 (decoded with surrogateescape)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
