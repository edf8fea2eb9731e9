"""The JetStream service of one account: stream lifecycle, and the wiring of the parts.

`JetStream(settings, clock, account, account_limits)` is a `Service`
(core/router.py): `start(router)` subscribes internally to `$JS.API.>` (and
`$JS.<domain>.API.>` with a domain, both answered by api/dispatch.py through
the route table), to `$JS.ACK.>` (consumer/acks.py) and to every stream's
subjects, reopens the streams found under
`<store_dir>/jetstream/<account>/streams/` with their durable consumers, and
from then on answers requests and stores published messages. No sockets, no
asyncio; time from the clock, settings from `EngineSettings` (settings.py).

What it does itself: stream lifecycle, loaded at start, created, updated,
restored from a snapshot and deleted, keeping each stream's subscription in
step. The rest is wired here and lives elsewhere:
- a stream's subjects go to `Intake` (intake.py), which sends a publish to
  the fast batches (fast_batch.py), the atomic batches (atomic_batch.py) or
  straight to the publish pipeline (publish.py: store, group commit, pub
  acks, listeners, periodic sync), which all three use;
- mirrors and sources (sourcing/) copy through the same pipeline;
- account and server store limits: `StoreLimits` (limits.py), handed to each
  stream as its per-publish check;
- what the API may ask (`ApiHost`, api/host.py) is implemented here; `/jsz`
  and `$JS.API.INFO` are computed by reports.py;
- consumers deliver through `RouterHost` (router_host.py).
Nothing in the package imports this module.

One engine serves one account (``$G`` by default) with that account's
`AccountLimits`: the server runs one engine per account with JetStream
enabled, each on that account's broker, so streams of one account are
invisible to another.

Invariant: nothing raised while handling a message escapes into the broker;
API failures become error responses, publish failures error pub acks; a
stream directory that does not load is reported and never overwritten.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.core.clock import Clock, Offload
from jetstream_server.core.filter_set import BudgetExceeded, FilterSet
from jetstream_server.core.router import Router
from jetstream_server.core.steps import Steps, drive
from jetstream_server.jetstream import advisories, persistence, reports
from jetstream_server.jetstream.api.consumers import restore_consumers
from jetstream_server.jetstream.api.dispatch import API_PREFIX, dispatch
from jetstream_server.jetstream.api.host import ApiQueue, ApiStats
from jetstream_server.jetstream.api.views import stream_info
from jetstream_server.jetstream.atomic_batch import AtomicBatches
from jetstream_server.jetstream.consumer.acks import ACK_SUBJECT, AckInbox
from jetstream_server.jetstream.consumer.consumer import Consumer
from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.errors import ApiError, Err, client_reason
from jetstream_server.jetstream.fast_batch import FastBatches
from jetstream_server.jetstream.intake import Intake
from jetstream_server.jetstream.limits import UNLIMITED, StoreLimits
from jetstream_server.jetstream.publish import PublishPipeline
from jetstream_server.jetstream.router_host import NO_ROUTER, RouterHost
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.jetstream.snapshot.restore import (
    Staged,
    Transfer,
    adopt_consumers,
    clear_stale_staging,
    restore_staging_dir,
    write_staged_consumers,
)
from jetstream_server.jetstream.sourcing.coordinator import Sourcing
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import Storage, StreamConfig
from jetstream_server.jetstream.versioning import with_dynamic
from jetstream_server.store.base import StreamStore

logger = logging.getLogger(__name__)


def open_stream_store(
    storage: Storage, directory: Path | None, *, sync_always: bool, sync_interval_s: float,
    offload: Offload | None = None,
) -> StreamStore:
    """The store backend for a stream (STORE's factory; memory when no directory).
    `offload` is the clock's `run_off_loop` (block compactions on the disk thread)."""
    from jetstream_server.store.factory import open_store

    return open_store(
        "memory" if directory is None else storage,
        None if directory is None else str(directory),
        sync_always=sync_always,
        # the pipeline's timer syncs every interval on the disk thread; the store's
        # own check (inline, on a store call) is only a backstop behind it
        sync_interval_s=sync_interval_s * 2,
        offload=offload,
    )


class JetStream:
    """The JetStream engine of one account (see module docstring)."""

    def __init__(
        self,
        settings: EngineSettings,
        clock: Clock,
        account: str = persistence.ACCOUNT,
        account_limits: AccountLimits = UNLIMITED,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.account = account
        self.router: Router = NO_ROUTER
        self.streams: dict[str, Stream] = {}
        self.store_limits = StoreLimits(
            self.streams, account_limits,
            max_memory=settings.max_memory_store, max_storage=settings.max_file_store,
        )
        self.consumer_host: ConsumerHost = RouterHost(self.router, clock, account, settings.domain)
        self.pipeline = PublishPipeline(settings, clock, self.streams)
        self.fast_batches = FastBatches(clock, self.pipeline)
        self.atomic_batches = AtomicBatches(clock, self.pipeline)
        self.intake = Intake(self.pipeline, self.fast_batches, self.atomic_batches)
        self.sourcing = Sourcing(self.streams, clock, self.pipeline.ingest_sourced)
        # snapshots being sent and restores being received (snapshot/): ended at close
        self.transfers: set[Transfer] = set()
        self.api_stats = ApiStats()
        self.api_queue = ApiQueue()
        # stream directories found at start that did not load: name -> why
        self.unloaded: dict[str, str] = {}
        self._stream_subs: dict[str, list[int]] = {}
        # every served stream's subjects in one trie, kept as streams come, change
        # and go: a create's overlap check costs its own subjects, not every stream's
        self._stream_filters = FilterSet()
        self._filtered: dict[str, tuple[str, ...]] = {}
        self._api_subs: list[int] = []

    # -- lifecycle ---------------------------------------------------------------
    def start(self, router: Router) -> None:
        self.router = router
        self.consumer_host = RouterHost(router, self.clock, self.account, self.settings.domain)
        self.pipeline.start(router)
        # a partial, not a closure: one Python frame less per request
        on_api = functools.partial(dispatch, self)
        self._api_subs.append(router.subscribe(API_PREFIX + ">", on_api))
        if self.settings.domain:
            self._api_subs.append(router.subscribe(f"$JS.{self.settings.domain}.API.>", on_api))
        self._api_subs.append(router.subscribe(ACK_SUBJECT, AckInbox(self.streams, router.publish)))
        if self.settings.store_dir is None:
            logger.warning("JetStream has no store directory: file streams are kept in memory")
        self._open_existing()

    def shutting_down(self) -> None:
        """Before the connections close: pending pub acks go out and waiting
        pull requests get `409 Server Shutdown` (core/router.py ShutdownNotice)."""
        self.pipeline.flush()
        for stream in self.streams.values():
            for consumer in list(stream.consumers.values()):
                if isinstance(consumer, Consumer):
                    consumer.shutting_down()

    def close(self) -> None:
        """Answer held acks, sync and close every stream."""
        self.sourcing.close()
        for transfer in list(self.transfers):
            transfer.close()
        self.pipeline.close()
        for name in list(self.streams):
            stream = self.streams.pop(name)
            self._unsubscribe_stream(name)
            self.store_limits.untrack(stream)
            try:
                stream.store.sync()
                stream.stop()
            except Exception:  # keep closing the others; this one is reported
                logger.exception("closing stream %s failed", name)
        for sid in self._api_subs:
            self.router.unsubscribe(sid)
        self._api_subs.clear()

    def jsz(self) -> dict[str, Any]:
        """This account's part of `/jsz` (reports.py)."""
        stats = self.api_stats
        return reports.jsz(self.settings, self.store_limits, stats.total, stats.errors)

    def _open_existing(self) -> None:
        store_dir = self.settings.store_dir
        if store_dir is None:
            return
        clear_stale_staging(store_dir, self.account)
        for directory in persistence.list_stream_dirs(store_dir, self.account):
            try:
                meta = persistence.read_meta(directory)
                config = StreamConfig.from_json(meta.config)
            except (OSError, ValueError, ApiError) as exc:
                logger.error("skipping stream directory %s: %s", directory, exc)
                why = client_reason(exc, directory)
                self.unloaded[directory.name] = f"{persistence.META_FILE} unreadable: {why}"
                continue
            try:
                store = self._open_store(config, directory)
            except Exception as exc:  # one damaged stream must not keep the server down
                logger.exception("could not open the store of stream %s", config.name)
                self.unloaded[directory.name] = (
                    f"store did not open: {client_reason(exc, directory)}"
                )
                continue
            report = store.recovery
            if report.lost_msgs or report.lost_bytes or report.notes:
                logger.warning(
                    "stream %s recovered %d messages, dropped %d messages (%d bytes): %s",
                    config.name, report.recovered_msgs, report.lost_msgs, report.lost_bytes,
                    "; ".join(report.notes),
                )
            stream = self._new_stream(config, store, directory, meta.created_ns)
            logger.info("restored stream %s (%d messages)", config.name, store.state().msgs)
            try:
                restore_consumers(self, stream)
            except Exception:  # a consumer restore bug must not lose the stream
                logger.exception("restoring the consumers of stream %s failed", config.name)
        # once every stream is back, mirrors and sources resume where they were
        for stream in list(self.streams.values()):
            self.sourcing.attach(stream)

    # -- stream lifecycle ------------------------------------------------------------
    def stream_dir(self, name: str, storage: Storage = "file") -> Path | None:
        """Where a stream lives on disk; None for memory streams (never persisted,
        as in nats-server) and when the server runs without a store directory."""
        store_dir = self.settings.store_dir
        if store_dir is None or storage == "memory":
            return None
        if "\x00" in name:
            # no directory can carry the name: nats-server's answer, without its path
            logger.warning("stream %r: name holds a NUL byte", name)
            raise ApiError(Err.STREAM_CREATE, err="error creating store for stream")
        return persistence.stream_dir(store_dir, name, self.account)

    def check_overlap(self, config: StreamConfig, ignore: str | None = None) -> None:
        """Does `config` take a subject of another stream (`ignore`: the stream
        being updated)? One look-up per subject in the index of every stream's
        subjects, within one budget of trie visits."""
        drive(self._overlap_steps(config, ignore, len(config.subjects) + 1))

    def _overlap_steps(
        self, config: StreamConfig, ignore: str | None, step: int
    ) -> Steps[None]:
        """`check_overlap`, yielding after each `step` subjects."""
        filters = self._stream_filters
        own = self._filtered.get(ignore, ()) if ignore is not None else ()
        for subject in own:
            filters.remove(subject)
        try:
            filters.renew_budget()
            for i, mine in enumerate(config.subjects):
                if filters.collides(mine):
                    raise ApiError(Err.STREAM_SUBJECT_OVERLAP)
                if i and i % step == 0:
                    yield
        except BudgetExceeded:
            raise ApiError(
                Err.STREAM_INVALID_CONFIG, err="too many subjects to check for overlaps"
            ) from None
        finally:
            for subject in own:
                filters.add(subject)

    def prepare_config(self, config: StreamConfig) -> StreamConfig:
        """The checks that need the other streams (mirror and source sizes,
        cycles) and what a mirror inherits from its origin (`mirror_direct`)."""
        config = Sourcing.inherit(config, self.streams)
        Sourcing.check(config, self.streams)
        return config

    def create_stream_steps(
        self, config: StreamConfig, step: int
    ) -> Steps[tuple[Stream, Callable[[], None] | None]]:
        """A new stream, served once done; with `sync_always`, also the job (for
        the disk thread) that makes its files survive a power cut, which the
        create is to be answered after (without it nothing is fsynced, as
        nats-server: what was written survives a process kill). Yields after
        each `step` subjects of its overlap check and of its subscriptions: the
        API runs the steps in loop turns, nothing else of the API in between
        (api/dispatch.py)."""
        # nats-server checks the account's limits before the subjects
        self.store_limits.check_reservation(config)
        yield from self._overlap_steps(config, None, step)
        directory = self.stream_dir(config.name, config.storage)
        created = self.clock.now_ns()
        fsyncs: list[Path] = []
        if directory is not None:
            self._refuse_unloaded(config.name, directory)
            try:
                fsyncs = persistence.create_stream_dir(
                    directory, persistence.StreamMeta(config=config.to_json(), created_ns=created)
                )
            except OSError as exc:
                logger.error("stream %s: creating its directory failed: %s", config.name, exc)
                raise ApiError(
                    Err.STREAM_CREATE, err=f"stream {config.name}: {client_reason(exc)}"
                ) from exc
        try:
            store = self._open_store(config, directory)
        except Exception as exc:
            if directory is not None:
                persistence.remove_stream_dir(directory)
            logger.exception("could not create the store of stream %s", config.name)
            raise ApiError(Err.STREAM_CREATE, err=str(exc)) from exc
        stream = yield from self._register_steps(config, store, directory, created, step)
        logger.info("created stream %s", config.name)
        advisories.stream_action(self.router, self.clock.now_ns(), config.name, "create",
                                 self.settings.domain or None)
        if fsyncs and self.settings.sync_always:
            return stream, functools.partial(persistence.fsync_paths, fsyncs)
        return stream, None

    def update_stream_steps(self, stream: Stream, config: StreamConfig, step: int) -> Steps[None]:
        """Give `stream` its new config, yielding after each `step` subjects of
        its overlap check and of its new subscriptions (as a create)."""
        stream.config.check_update(config)
        yield from self._overlap_steps(config, stream.name, step)
        self.store_limits.check_reservation(config, ignore=stream.name)
        if stream.directory is not None:
            persistence.write_meta(
                stream.directory,
                persistence.StreamMeta(config=config.to_json(), created_ns=stream.created_ns),
                sync=self.settings.sync_always,  # as nats-server: fsynced with sync_always only
            )
        subjects_changed = config.subjects != stream.config.subjects
        if not config.allow_atomic:
            self.atomic_batches.drop_stream(stream.name)
        if not config.allow_batched:
            self.fast_batches.drop_stream(stream.name)
        self.store_limits.untrack(stream)
        try:
            stream.update_config(config)
        finally:
            self.store_limits.track(stream)
        if subjects_changed:
            self._unsubscribe_stream(stream.name)
            yield from self._subscribe_steps(stream, step)
        self.sourcing.attach(stream)  # a removed mirror promotes the stream; sources follow the config
        advisories.stream_action(self.router, self.clock.now_ns(), stream.name, "modify",
                                 self.settings.domain or None)

    def delete_stream(self, stream: Stream) -> None:
        self.sourcing.detach(stream.name)
        self._unsubscribe_stream(stream.name)
        self.streams.pop(stream.name, None)
        self.store_limits.untrack(stream)
        self.atomic_batches.drop_stream(stream.name)
        self.fast_batches.drop_stream(stream.name)
        self.pipeline.drop_stream(stream)
        consumers = list(stream.consumers)
        stream.delete()
        if stream.directory is not None:
            persistence.remove_stream_dir(stream.directory)
        logger.info("deleted stream %s", stream.name)
        now = self.clock.now_ns()
        domain = self.settings.domain or None
        for name in consumers:  # the consumers first, as nats-server stops them first
            advisories.consumer_action(self.router, now, stream.name, name, "delete", domain)
        advisories.stream_action(self.router, now, stream.name, "delete", domain)

    def _open_store(self, config: StreamConfig, directory: Path | None) -> StreamStore:
        """The store of a stream being loaded, created or made live from a restore."""
        return open_stream_store(
            config.storage,
            directory,
            sync_always=self.settings.sync_always and not config.async_persist,
            sync_interval_s=self.settings.sync_interval_s,
            offload=self.clock.run_off_loop,
        )

    def _new_stream(
        self, config: StreamConfig, store: StreamStore, directory: Path | None, created: int
    ) -> Stream:
        """A stream listed and subscribed, with the account's per-publish limit check."""
        return drive(self._new_stream_steps(config, store, directory, created, len(config.subjects) + 1))

    def _new_stream_steps(
        self, config: StreamConfig, store: StreamStore, directory: Path | None, created: int,
        step: int,
    ) -> Steps[Stream]:
        stream = Stream(
            config, store, self.clock, directory=directory, created_ns=created,
            account_check=self.store_limits.publish_check(),
        )
        self.streams[config.name] = stream
        self.store_limits.track(stream)
        yield from self._subscribe_steps(stream, step)
        return stream

    def _register(
        self, config: StreamConfig, store: StreamStore, directory: Path | None, created: int
    ) -> Stream:
        """A new stream (created or restored) served, and an origin that waiting
        mirrors and sources start copying from."""
        return drive(self._register_steps(config, store, directory, created, len(config.subjects) + 1))

    def _register_steps(
        self, config: StreamConfig, store: StreamStore, directory: Path | None, created: int,
        step: int,
    ) -> Steps[Stream]:
        stream = yield from self._new_stream_steps(config, store, directory, created, step)
        self.sourcing.attach(stream)
        self.sourcing.stream_created(stream)
        return stream

    def _refuse_unloaded(self, name: str, directory: Path) -> None:
        """Never create a stream over data that exists but did not load: a damaged
        meta.json or store is the operator's to repair or move, not ours to delete."""
        if not directory.exists() and not directory.is_symlink():
            return
        why = self.unloaded.get(name, "it is not a stream this server loaded")
        logger.error(
            "stream %s: not created over its existing directory %s (%s)", name, directory, why
        )
        raise ApiError(
            Err.STREAM_CREATE,
            err=(
                f"stream {name} not created: its data directory exists but did not load "
                f"({why}); repair or move it aside and restart the server"
            ),
        )

    def _subscribe_stream(self, stream: Stream) -> None:
        drive(self._subscribe_steps(stream, len(stream.config.subjects) + 1))

    def _subscribe_steps(self, stream: Stream, step: int) -> Steps[None]:
        """Subscribe the stream's subjects and index them, yielding after each `step`."""
        # a partial, not a closure: one Python frame less per published message
        handler = functools.partial(self.intake.publish, stream)
        subjects = tuple(stream.config.subjects)
        sids = self._stream_subs[stream.name] = []
        self._filtered[stream.name] = subjects
        subscribe, add = self.router.subscribe, self._stream_filters.add
        for i, subject in enumerate(subjects):
            sids.append(subscribe(subject, handler))
            add(subject)
            if i and i % step == 0:
                yield

    def _unsubscribe_stream(self, name: str) -> None:
        for sid in self._stream_subs.pop(name, []):
            self.router.unsubscribe(sid)
        for subject in self._filtered.pop(name, ()):
            self._stream_filters.remove(subject)

    # -- restores (snapshot/restore.py) ----------------------------------------------
    def stage_restore(self, config: StreamConfig) -> tuple[StreamStore, Path | None]:
        final = self.stream_dir(config.name, config.storage)
        staging = None
        store_dir = self.settings.store_dir
        if final is not None and store_dir is not None:
            staging = restore_staging_dir(store_dir, config.name, self.account)
        try:
            store = open_stream_store(
                config.storage, staging, sync_always=False,
                sync_interval_s=self.settings.sync_interval_s,
            )
        except Exception as exc:
            logger.exception("could not create the staging store of restore %s", config.name)
            raise ApiError(Err.STREAM_CREATE, err=str(exc)) from exc
        return store, staging

    def adopt_restored(self, staged: Staged) -> dict[str, Any]:
        """The staged store becomes the stream (checks as a create; the staging
        directory is moved into place, then opened as at start)."""
        config = staged.config
        if config.name in self.streams:
            raise ApiError(Err.STREAM_NAME_EXIST_RESTORE_FAILED)
        self.store_limits.check_reservation(config)
        self.check_overlap(config)
        created = self.clock.now_ns()
        store = staged.store
        directory = self.stream_dir(config.name, config.storage)
        if directory is not None and staged.directory is not None:
            self._refuse_unloaded(config.name, directory)
            store.close()
            write_staged_consumers(staged, self.settings.sync_always, created)
            persistence.write_meta(
                staged.directory, persistence.StreamMeta(config=config.to_json(), created_ns=created)
            )
            persistence.make_dirs(directory.parent)
            os.rename(staged.directory, directory)
            persistence.fsync_dir(directory.parent)
            persistence.fsync_dir(staged.directory.parent)
            store = self._open_store(config, directory)
        stream = self._register(config, store, directory, created)
        if directory is not None:
            restore_consumers(self, stream)
        adopt_consumers(self.consumer_host, stream, staged.consumers)
        # the config's limits hold for what was restored too (nats-server's store enforces
        # them as it stores): setting the same config applies them all
        stream.update_config(config)
        logger.info("restored stream %s from a snapshot", config.name)
        info = stream_info(stream, self.clock.now_ns())
        return {**info, "config": with_dynamic(info["config"]), "did_create": True}
