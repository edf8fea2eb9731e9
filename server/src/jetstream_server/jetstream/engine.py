"""The JetStream service: streams, the `$JS.API` entry and the publish path.

`JetStream(settings, clock)` is a `Service` (core/router.py): `start(router)`
subscribes internally to `$JS.API.>` (and `$JS.<domain>.API.>` with a domain,
both answered by api/dispatch.py through the route table), to `$JS.ACK.>`
(consumer/acks.py) and to every stream's subjects, reopens the streams found
under `<store_dir>/jetstream/<account>/streams/` with their durable consumers, and
from then on answers requests and stores published messages. No sockets, no
asyncio; time from the clock.

Mirrors and sources (sourcing/) copy between streams in bounded turns; their
messages go through `ingest`, the same store-ack-republish-notify path as a
client's publish.

The engine is the top of the JetStream package: it implements what API
handlers may use (`ApiHost`, api/host.py) and gives consumers the router as a
`ConsumerHost` (consumer/delivery.py) through `RouterHost`. Nothing below
imports it.

Durability: with `sync_always` the pub acks of one loop turn are held, the
touched stores are synced once (group commit) in a callback scheduled with
`clock.call_later(0, ...)`, then acks go out and listeners hear of the
messages, in publish order. Without it acks go right after the OS write and a
periodic `sync()` runs every `sync_interval_s`. The fsyncs themselves run off
the loop when the clock offers `run_off_loop` (app/loop_clock.py: the disk
thread): the stores hand them over with `begin_sync()`, the loop keeps
serving, and the held acks go out when the disk thread is done. One group is
in flight at a time; publishes arriving meanwhile form the next group, so
acks still go out in publish order. File stores get `run_off_loop` too, for
their block compactions (store/compaction.py): the same disk thread, so
rewrites, unlinks and fsyncs reach the disk in the order the loop asked. A
stream with `persist_mode: async` (nats-server 2.12) opts out of the group commit: its acks go right after the
OS write and it is synced by the periodic sync, as without `sync_always`.

One engine serves one account (`account`, ``$G`` by default) with that
account's `AccountLimits` (account_limits.py): the server runs one engine per
account with JetStream enabled, each on that account's broker, so streams of
one account are invisible to another.

Invariant: nothing raised while handling a message escapes into the broker;
API failures become error responses, publish failures error pub acks.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.filter_set import BudgetExceeded, FilterSet
from jetstream_server.core.router import MessageHandler, Router
from jetstream_server.jetstream import advisories, counters, persistence
from jetstream_server.jetstream.account_limits import (
    UNLIMITED,
    check_new_stream,
    check_stream_config,
)
from jetstream_server.jetstream.api.consumers import restore_consumers
from jetstream_server.jetstream.api.dispatch import API_PREFIX, dispatch
from jetstream_server.jetstream.api.views import stream_info
from jetstream_server.jetstream.atomic_batch import (
    AtomicBatches,
    BatchAck,
    batch_id_of,
    check_commit,
)
from jetstream_server.jetstream.consumer.acks import ACK_SUBJECT, AckInbox
from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.fast_batch import SUFFIX as FAST_BATCH_SUFFIX
from jetstream_server.jetstream.fast_batch import FastBatches, FastReply
from jetstream_server.jetstream.snapshot.restore import (
    Staged,
    Transfer,
    adopt_consumers,
    clear_stale_staging,
    restore_staging_dir,
    write_staged_consumers,
)
from jetstream_server.jetstream.sourcing.coordinator import Sourcing
from jetstream_server.jetstream.stream import PubAck, Sourced, Stream
from jetstream_server.jetstream.stream_config import ServerLimits, StreamConfig
from jetstream_server.jetstream.versioning import API_LEVEL, with_dynamic
from jetstream_server.store.base import StoreError, StreamStore

DEFAULT_MAX_PENDING = 64 * 1024 * 1024  # nats-server's MAX_PENDING_SIZE
logger = logging.getLogger(__name__)

DEFAULT_SYNC_INTERVAL_S = 120.0


def _setting(settings: Any, name: str, default: Any) -> Any:
    value = getattr(settings, name, default)
    return default if value is None else value


def open_stream_store(
    storage: str, directory: Path | None, *, sync_always: bool, sync_interval_s: float,
    offload: Any = None,
) -> StreamStore:
    """The store backend for a stream (STORE's factory; memory when no directory).
    `offload` is the clock's `run_off_loop` (block compactions on the disk thread)."""
    from jetstream_server.store.factory import open_store

    if directory is None:
        storage = "memory"
    return open_store(
        storage,
        None if directory is None else str(directory),
        sync_always=sync_always,
        # the engine's timer syncs every interval on the disk thread; the store's
        # own check (inline, on a store call) is only a backstop behind it
        sync_interval_s=sync_interval_s * 2,
        offload=offload,
    )



def _is_utf8(text: str) -> bool:
    """False when `text` holds bytes that were not UTF-8 (decoded with surrogateescape)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True

class JetStream:
    """The JetStream engine (see module docstring)."""

    def __init__(
        self,
        settings: Any,
        clock: Clock,
        account: str = persistence.ACCOUNT,
        account_limits: AccountLimits = UNLIMITED,
        *,
        server_name: str = "",
    ) -> None:
        self.clock = clock
        self.server_name = server_name  # the leader named in stream info's `cluster`
        self.account = account
        self.account_limits = account_limits
        # the engines of every account on this server, this one included (set
        # by the server when there are several): the server's store limits
        # are checked against their sum
        self.peers: list[JetStream] = []
        self.store_dir: str | None = _setting(settings, "store_dir", None) or None
        self.domain: str | None = _setting(settings, "domain", None) or None
        self.sync_always: bool = bool(_setting(settings, "sync_always", False))
        self.sync_interval_s: float = float(
            _setting(settings, "sync_interval_s", DEFAULT_SYNC_INTERVAL_S)
        ) or DEFAULT_SYNC_INTERVAL_S
        self.max_memory: int = int(_setting(settings, "max_memory_store", -1)) or -1
        self.max_storage: int = int(_setting(settings, "max_file_store", -1)) or -1
        self.limits = ServerLimits.of(getattr(settings, "limits", None))
        self.max_pending = DEFAULT_MAX_PENDING  # the app sets the server's value
        self.router: Router = _NoRouter()
        self.consumer_host: ConsumerHost = RouterHost(self.router, clock, self.account, self.domain or "")
        self.streams: dict[str, Stream] = {}
        self.sourcing = Sourcing(self.streams, clock, self._ingest_sourced)
        self.batches = AtomicBatches(clock)
        # snapshots being sent and restores being received (snapshot/): ended at close
        self.transfers: set[Transfer] = set()
        self.fast_batches = FastBatches(
            clock, self.ingest, self._send_ack, self._send_raw, self.domain or ""
        )
        self.api_total = 0
        self.api_errors = 0
        self._stream_subs: dict[str, list[int]] = {}
        # stream directories found at start that did not load: name -> why
        self.unloaded: dict[str, str] = {}
        self._api_subs: list[int] = []
        self._pending: list[tuple[Stream, str | None, PubAck]] = []
        self._dirty: set[str] = set()
        self._flush_timer: TimerHandle | None = None
        self._syncing = False  # a group commit's fsyncs are on the disk thread
        self._sync_timer: TimerHandle | None = None
        self._started = False
        self._ack_prefix: dict[str, bytes] = {}
        self._ack_suffix = (
            b',"domain":' + json.dumps(self.domain).encode() + b"}" if self.domain else b"}"
        )

    # -- lifecycle ---------------------------------------------------------------
    def start(self, router: Router) -> None:
        self.router = router
        self.consumer_host = RouterHost(router, self.clock, self.account, self.domain or "")
        self._started = True
        # a partial, not a closure: one Python frame less per request
        on_api = functools.partial(dispatch, self)
        self._api_subs.append(router.subscribe(API_PREFIX + ">", on_api))
        if self.domain:
            self._api_subs.append(router.subscribe(f"$JS.{self.domain}.API.>", on_api))
        self._api_subs.append(router.subscribe(ACK_SUBJECT, AckInbox(self.streams, router.publish)))
        if self.store_dir is None:
            logger.warning("JetStream has no store directory: file streams are kept in memory")
        self._open_existing()
        # with sync_always too: the streams with `persist_mode: async` sync on it
        self._arm_sync_timer()

    def shutting_down(self) -> None:
        """Before the connections close: pending pub acks go out and waiting
        pull requests get `409 Server Shutdown` (core/router.py ShutdownNotice)."""
        self._flush()
        for stream in self.streams.values():
            for consumer in list(stream.consumers.values()):
                notice = getattr(consumer, "shutting_down", None)
                if notice is not None:
                    notice()

    def close(self) -> None:
        """Flush pending acks, sync and close every stream."""
        self.sourcing.close()
        for transfer in list(self.transfers):
            transfer.close()
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        self._flush(inline=True)
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        for name in list(self.streams):
            stream = self.streams.pop(name)
            self._unsubscribe_stream(name)
            try:
                stream.store.sync()
                stream.stop()
            except Exception:  # keep closing the others; this one is reported
                logger.exception("closing stream %s failed", name)
        for sid in self._api_subs:
            self.router.unsubscribe(sid)
        self._api_subs.clear()

    def _open_existing(self) -> None:
        if self.store_dir is None:
            return
        clear_stale_staging(self.store_dir, self.account)
        for directory in persistence.list_stream_dirs(self.store_dir, self.account):
            try:
                meta = persistence.read_meta(directory)
                config = StreamConfig.from_json(meta.config)
            except (OSError, ValueError, ApiError) as exc:
                logger.error("skipping stream directory %s: %s", directory, exc)
                why = _why(exc, directory)
                self.unloaded[directory.name] = f"{persistence.META_FILE} unreadable: {why}"
                continue
            try:
                store = self._open_store(config, directory)
            except Exception as exc:  # one damaged stream must not keep the server down
                logger.exception("could not open the store of stream %s", config.name)
                self.unloaded[directory.name] = f"store did not open: {_why(exc, directory)}"
                continue
            report = store.recovery
            if report.lost_msgs or report.lost_bytes or report.notes:
                logger.warning(
                    "stream %s recovered %d messages, dropped %d messages (%d bytes): %s",
                    config.name, report.recovered_msgs, report.lost_msgs, report.lost_bytes,
                    "; ".join(report.notes),
                )
            stream = Stream(
                config, store, self.clock, directory=directory, created_ns=meta.created_ns,
                account_check=self._store_limit_check(),
            )
            self.streams[config.name] = stream
            self._subscribe_stream(stream)
            logger.info("restored stream %s (%d messages)", config.name, store.state().msgs)
            try:
                restore_consumers(self, stream)
            except Exception:  # a consumer restore bug must not lose the stream
                logger.exception("restoring the consumers of stream %s failed", config.name)
        # once every stream is back, mirrors and sources resume where they were
        for stream in list(self.streams.values()):
            self.sourcing.attach(stream)

    # -- what handlers use ---------------------------------------------------------
    def respond(self, reply: str | None, body: dict[str, Any]) -> None:
        if reply:
            self.router.publish(reply, None, None, json.dumps(body, separators=(",", ":")).encode())

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.router.publish(subject, reply, headers, payload)

    def has_interest(self, subject: str) -> bool:
        return self.router.has_interest(subject)

    def api_origin(self) -> object | None:
        return getattr(self.router, "origin", None)

    def reply_backlog(self, subject: str) -> int:
        backlog = getattr(self.router, "backlog", None)  # the broker's (routers of tests: none)
        return int(backlog(subject)) if backlog is not None else 0

    def audit(self, subject: str, request: bytes, response: dict[str, Any],
              origin: object | None) -> None:
        if not self.router.has_interest(advisories.API_AUDIT):
            return
        advisories.api_audit(self, self.clock.now_ns(), self.server_name,
                             self._client_info(origin), subject, request, response, self.domain)

    def _client_info(self, origin: object | None) -> dict[str, Any] | None:
        """nats-server's ClientInfo of a client connection, as far as the session knows it."""
        if origin is None:
            return None
        info: dict[str, Any] = {
            "host": getattr(origin, "ip", "") or None,
            "id": getattr(origin, "cid", None),
            "acc": self.account,
            "user": getattr(origin, "user", None),
            "name": getattr(origin, "name", "") or None,
            "lang": getattr(origin, "lang", "") or None,
            "ver": getattr(origin, "version", "") or None,
            "server": self.server_name or None,
            "kind": "Client",
            "client_type": "nats",
        }
        return {k: v for k, v in info.items() if v is not None}

    def lookup_stream(self, name: str) -> Stream:
        stream = self.streams.get(name)
        if stream is None:
            raise ApiError(Err.STREAM_NOT_FOUND)
        return stream

    # -- stream lifecycle ------------------------------------------------------------
    def stream_dir(self, name: str, storage: str = "file") -> Path | None:
        """Where a stream lives on disk; None for memory streams (never persisted,
        as in nats-server) and when the server runs without a store directory."""
        if self.store_dir is None or storage == "memory":
            return None
        if "\x00" in name:
            # no directory can carry the name: nats-server's answer, without its path
            logger.warning("stream %r: name holds a NUL byte", name)
            raise ApiError(Err.STREAM_CREATE, err="error creating store for stream")
        return persistence.stream_dir(self.store_dir, name, self.account)

    def check_overlap(self, config: StreamConfig, ignore: str | None = None) -> None:
        # every other stream's subjects in one trie: linear, not streams x subjects^2
        others = FilterSet()
        for other in self.streams.values():
            if other.name != ignore:
                for theirs in other.config.subjects:
                    others.add(theirs)
        try:
            if any(others.collides(mine) for mine in config.subjects):
                raise ApiError(Err.STREAM_SUBJECT_OVERLAP)
        except BudgetExceeded:
            raise ApiError(
                Err.STREAM_INVALID_CONFIG, err="too many subjects to check for overlaps"
            ) from None

    def check_account_reservation(self, config: StreamConfig, ignore: str | None = None) -> None:
        """A stream whose max_bytes does not fit the account's remaining store is refused."""
        reserved_here = sum(
            max(s.config.max_bytes, 0)
            for s in self.streams.values()
            if s.config.storage == config.storage and s.name != ignore
        )
        acc = self.account_limits
        if ignore is None:
            check_new_stream(
                acc, len(self.streams), config.max_consumers, config.storage, config.max_bytes,
                reserved_here,
            )
        else:
            check_stream_config(acc, config.max_consumers, config.storage, config.max_bytes, reserved_here)
        limit = self.max_memory if config.storage == "memory" else self.max_storage
        if limit <= 0 or config.max_bytes <= 0:
            return
        # the server's store limits hold for every account together
        reserved = reserved_here + self.server_reserved(config.storage) - self.reserved(config.storage)
        if reserved + config.max_bytes > limit:
            raise ApiError(
                Err.MEMORY_RESOURCES_EXCEEDED if config.storage == "memory" else Err.STORAGE_RESOURCES_EXCEEDED
            )

    def _store_limit_check(self) -> Callable[[Stream, int], None] | None:
        """The per-publish store-limit check, or None when neither the server
        nor the account has limits."""
        acc = self.account_limits
        limited = self.max_memory > 0 or self.max_storage > 0 or acc.max_memory >= 0 or acc.max_storage >= 0
        return self._account_check if limited else None

    def _account_check(self, stream: Stream, size: int) -> None:
        storage = stream.config.storage
        used = self.usage(storage)
        if self.account_limits.exceeded_by(storage, used, size):
            # nats-server's answer when the account's own limit would be passed
            raise ApiError(Err.ACCOUNT_RESOURCES_EXCEEDED)
        limit = self.max_memory if storage == "memory" else self.max_storage
        if limit <= 0:
            return
        if (self.server_usage(storage) if self.peers else used) + size > limit:
            # what nats-server answers a publish that would pass the server's store limit
            raise ApiError(Err.INSUFFICIENT_RESOURCES)

    def server_usage(self, storage: str) -> int:
        """Bytes stored by every account of the server (`peers`: their engines)."""
        return sum(e.usage(storage) for e in self.peers) if self.peers else self.usage(storage)

    def server_reserved(self, storage: str) -> int:
        return sum(e.reserved(storage) for e in self.peers) if self.peers else self.reserved(storage)

    def usage(self, storage: str) -> int:
        return sum(s.store.stored_bytes() for s in self.streams.values() if s.config.storage == storage)

    def prepare_config(self, config: StreamConfig) -> StreamConfig:
        """The checks that need the other streams (mirror and source sizes,
        cycles) and what a mirror inherits from its origin (`mirror_direct`)."""
        config = Sourcing.inherit(config, self.streams)
        Sourcing.check(config, self.streams)
        return config

    def create_stream(self, config: StreamConfig) -> Stream:
        # nats-server checks the account's limits before the subjects
        self.check_account_reservation(config)
        self.check_overlap(config)
        directory = self.stream_dir(config.name, config.storage)
        created = self.clock.now_ns()
        if directory is not None:
            self._refuse_unloaded(config.name, directory)
            try:
                persistence.create_stream_dir(
                    directory, persistence.StreamMeta(config=config.to_json(), created_ns=created)
                )
            except OSError as exc:
                logger.error("stream %s: creating its directory failed: %s", config.name, exc)
                raise ApiError(
                    Err.STREAM_CREATE, err=f"stream {config.name}: {_why(exc)}"
                ) from exc
        try:
            store = self._open_store(config, directory)
        except Exception as exc:
            if directory is not None:
                persistence.remove_stream_dir(directory)
            logger.exception("could not create the store of stream %s", config.name)
            raise ApiError(Err.STREAM_CREATE, err=str(exc)) from exc
        stream = self._register(config, store, directory, created)
        logger.info("created stream %s", config.name)
        advisories.stream_action(self, self.clock.now_ns(), config.name, "create", self.domain)
        return stream

    def _open_store(self, config: StreamConfig, directory: Path | None) -> StreamStore:
        """The store of a stream being loaded, created or made live from a restore."""
        return open_stream_store(
            config.storage,
            directory,
            sync_always=self.sync_always and not config.async_persist,
            sync_interval_s=self.sync_interval_s,
            offload=getattr(self.clock, "run_off_loop", None),
        )

    def _register(
        self, config: StreamConfig, store: StreamStore, directory: Path | None, created: int
    ) -> Stream:
        """A new stream (created or restored) served: listed, subscribed, and an
        origin that waiting mirrors and sources start copying from."""
        stream = Stream(
            config, store, self.clock, directory=directory, created_ns=created,
            account_check=self._store_limit_check(),
        )
        self.streams[config.name] = stream
        self._subscribe_stream(stream)
        self.sourcing.attach(stream)
        self.sourcing.stream_created(stream)
        return stream

    # -- restores (snapshot/restore.py) ----------------------------------------------
    def check_restore_config(self, config: StreamConfig) -> None:
        self.check_account_reservation(config)

    def stage_restore(self, config: StreamConfig) -> tuple[StreamStore, Path | None]:
        final = self.stream_dir(config.name, config.storage)
        staging = None
        if final is not None and self.store_dir is not None:
            staging = restore_staging_dir(self.store_dir, config.name, self.account)
        try:
            store = open_stream_store(
                config.storage, staging, sync_always=False, sync_interval_s=self.sync_interval_s
            )
        except Exception as exc:
            logger.exception("could not create the staging store of restore %s", config.name)
            raise ApiError(Err.STREAM_CREATE, err=str(exc)) from exc
        return store, staging

    def check_restore_room(self, storage: str, size: int) -> None:
        exceeded = Err.MEMORY_RESOURCES_EXCEEDED if storage == "memory" else Err.STORAGE_RESOURCES_EXCEEDED
        if self.account_limits.exceeded_by(storage, self.usage(storage), size):
            raise ApiError(exceeded)
        limit = self.max_memory if storage == "memory" else self.max_storage
        if limit > 0 and self.server_usage(storage) + size > limit:
            raise ApiError(exceeded)

    def adopt_restored(self, staged: Staged) -> dict[str, Any]:
        """The staged store becomes the stream (checks as a create; the staging
        directory is moved into place, then opened as at start)."""
        config = staged.config
        if config.name in self.streams:
            raise ApiError(Err.STREAM_NAME_EXIST_RESTORE_FAILED)
        self.check_account_reservation(config)
        self.check_overlap(config)
        created = self.clock.now_ns()
        store = staged.store
        directory = self.stream_dir(config.name, config.storage)
        if directory is not None and staged.directory is not None:
            self._refuse_unloaded(config.name, directory)
            store.close()
            write_staged_consumers(staged, self.sync_always, created)
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

    def update_stream(self, stream: Stream, config: StreamConfig) -> None:
        stream.config.check_update(config)
        self.check_overlap(config, ignore=stream.name)
        self.check_account_reservation(config, ignore=stream.name)
        if stream.directory is not None:
            persistence.write_meta(
                stream.directory,
                persistence.StreamMeta(config=config.to_json(), created_ns=stream.created_ns),
            )
        subjects_changed = config.subjects != stream.config.subjects
        if not config.flag("allow_atomic"):
            self.batches.drop_stream(stream.name)
        if not config.flag("allow_batched"):
            self.fast_batches.drop_stream(stream.name)
        stream.update_config(config)
        if subjects_changed:
            self._unsubscribe_stream(stream.name)
            self._subscribe_stream(stream)
        self.sourcing.attach(stream)  # a removed mirror promotes the stream; sources follow the config
        advisories.stream_action(self, self.clock.now_ns(), stream.name, "modify", self.domain)

    def delete_stream(self, stream: Stream) -> None:
        self.sourcing.detach(stream.name)
        self._unsubscribe_stream(stream.name)
        self.streams.pop(stream.name, None)
        self.batches.drop_stream(stream.name)
        self.fast_batches.drop_stream(stream.name)
        self._pending = [p for p in self._pending if p[0] is not stream]
        consumers = [name for name in stream.consumers]
        stream.delete()
        if stream.directory is not None:
            persistence.remove_stream_dir(stream.directory)
        logger.info("deleted stream %s", stream.name)
        now = self.clock.now_ns()
        for name in consumers:  # the consumers first, as nats-server stops them first
            advisories.consumer_action(self, now, stream.name, name, "delete", self.domain)
        advisories.stream_action(self, now, stream.name, "delete", self.domain)

    def _subscribe_stream(self, stream: Stream) -> None:
        handler = self._publish_handler(stream)
        self._stream_subs[stream.name] = [
            self.router.subscribe(subject, handler) for subject in stream.config.subjects
        ]

    def _unsubscribe_stream(self, name: str) -> None:
        for sid in self._stream_subs.pop(name, []):
            self.router.unsubscribe(sid)

    # -- the publish path -------------------------------------------------------------
    def _publish_handler(
        self, stream: Stream
    ) -> Callable[[str, str | None, bytes | None, bytes], None]:
        # a partial, not a closure: one Python frame less per published message
        return functools.partial(self.handle_publish, stream)

    def handle_publish(
        self, stream: Stream, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        if stream.closed:
            return
        if stream.config.mirror is not None:
            return  # a mirror takes messages only from its origin (it has no subjects either)
        if reply is not None and reply.endswith(FAST_BATCH_SUFFIX):
            self.fast_batches.publish(stream, subject, reply, headers, payload)
            return
        if headers is not None and b"Nats-Batch-Id" in headers and batch_id_of(headers):
            self._publish_batch(stream, subject, reply, headers, payload)
            return
        self.ingest(stream, subject, reply, headers, payload)

    def ingest(
        self, stream: Stream, subject: str, reply: str | None, headers: bytes | None,
        payload: bytes, sourced: Sourced | None = None,
    ) -> PubAck:
        """Store one message (published, or brought in by a mirror or source),
        then ack, republish and tell listeners (after the group commit with
        `sync_always`)."""
        try:
            if not subject.isascii() and not _is_utf8(subject):
                # bytes that are not UTF-8 (kept as surrogates) cannot be stored or
                # shown in API replies; refused with one log line, not a traceback
                logger.info("stream %s: publish subject %r is not UTF-8: refused", stream.name, subject)
                raise ApiError(Err.STREAM_STORE_FAILED, err="subject is not valid UTF-8")
            ack = stream.accept(subject, headers, payload, sourced)
        except ApiError as exc:
            ack = PubAck(0, error=exc)
        except (StoreError, OSError) as exc:  # disk full, sequence space: expected, one line
            logger.error("stream %s: storing a message on %s failed: %s", stream.name, subject, exc)
            ack = PubAck(seq=0, error=ApiError(Err.STREAM_STORE_FAILED, err=_why(exc)))
        except Exception as exc:  # a store failure answers the publisher, the server keeps going
            logger.exception("stream %s: storing a message on %s failed", stream.name, subject)
            ack = PubAck(seq=0, error=ApiError(Err.STREAM_STORE_FAILED, err=str(exc)))
        if self.sync_always and (ack.msg is not None or self._pending) and (
            not stream.config.async_persist  # persist_mode async: acked before its sync
        ):
            self._pending.append((stream, reply, ack))
            if ack.msg is not None:
                self._dirty.add(stream.name)
            if self._flush_timer is None:
                self._flush_timer = self.clock.call_later(0, self._flush_from_timer)
            return ack
        self._send_ack(stream, reply, ack)
        if ack.msg is not None:
            stream.deliver(ack.msg)
        return ack

    def _ingest_sourced(
        self, stream: Stream, subject: str, headers: bytes | None, payload: bytes, sourced: Sourced
    ) -> PubAck:
        return self.ingest(stream, subject, None, headers, payload, sourced)

    def _publish_batch(
        self, stream: Stream, subject: str, reply: str | None, headers: bytes, payload: bytes
    ) -> None:
        """A message of an atomic batch (atomic_batch.py): staged, or the whole
        batch stored and acknowledged once, or refused."""
        try:
            commit = self.batches.publish(stream, subject, headers, payload)
            if commit is None:
                if reply and not stream.config.no_ack:
                    self.router.publish(reply, None, None, b"")  # staged
                return
            now = self.clock.now_ns()
            check_commit(stream, commit, lambda msg_id: stream.is_duplicate(msg_id, now))
        except ApiError as exc:
            self._send_ack(stream, reply, PubAck(0, error=exc))
            return
        acks: list[PubAck] = []
        for msg_subject, msg_headers, msg_payload in commit.messages:
            try:
                ack = stream.accept(msg_subject, msg_headers, msg_payload)
            except ApiError as exc:
                ack = PubAck(0, error=exc)
            except Exception as exc:
                logger.exception("stream %s: storing a batch message failed", stream.name)
                ack = PubAck(0, error=ApiError(Err.STREAM_STORE_FAILED, err=str(exc)))
            if ack.error is not None or ack.msg is None:
                # checked before, so only a store failure gets here: take back what was stored
                for stored in acks:
                    stream.store.remove(stored.seq)
                self._send_ack(stream, reply, ack if ack.error is not None else PubAck(
                    0, error=ApiError(Err.ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE)))
                return
            acks.append(ack)
        last = BatchAck(acks[-1], commit.batch_id, len(acks))
        if self.sync_always:
            self._pending.extend((stream, None, ack) for ack in acks[:-1])
            self._pending.append((stream, reply, last))
            self._dirty.add(stream.name)
            if self._flush_timer is None:
                self._flush_timer = self.clock.call_later(0, self._flush_from_timer)
            return
        self._send_ack(stream, reply, last)
        for ack in acks:
            if ack.msg is not None:
                stream.deliver(ack.msg)

    def _flush_from_timer(self) -> None:
        self._flush_timer = None
        self._flush()

    def _flush(self, *, inline: bool = False) -> None:
        """Group commit: one sync per touched store, then acks and listeners in order.
        The fsyncs run on the disk thread when there is one (module docstring)."""
        if self._syncing and not inline:
            return  # the group in flight flushes the next one when it is done
        pending, self._pending = self._pending, []
        dirty, self._dirty = self._dirty, set()
        jobs: list[tuple[Stream, Callable[[], None]]] = []
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
        run_off_loop = getattr(self.clock, "run_off_loop", None)
        if not jobs or inline or run_off_loop is None:
            failed.update(_run_sync_jobs(jobs))
            self._acks_after_sync(pending, failed)
            return
        self._syncing = True

        def synced(result: Any) -> None:
            self._syncing = False
            if isinstance(result, BaseException):  # the runner itself failed
                result = {stream.name: result for stream, _ in jobs}
            failed.update(result)
            self._acks_after_sync(pending, failed)
            if self._pending and self._flush_timer is None:
                self._flush_timer = self.clock.call_later(0, self._flush_from_timer)

        run_off_loop(functools.partial(_run_sync_jobs, jobs), synced)

    def _acks_after_sync(
        self, pending: list[tuple[Stream, str | None, PubAck]], failed: dict[str, BaseException]
    ) -> None:
        for name, exc in failed.items():
            logger.error("stream %s: sync failed: %s", name, exc)
            stream = self.streams.get(name)
            if stream is not None and not stream.closed:
                stream.store.sync_failed()
            error = ApiError(Err.STREAM_STORE_FAILED, err=_why(exc))
            pending = [
                (s, r, PubAck(seq=0, error=error) if s.name == name else a) for s, r, a in pending
            ]
        for stream, reply, ack in pending:
            self._send_ack(stream, reply, ack)
            if ack.msg is not None and not stream.closed:
                stream.deliver(ack.msg)

    def _send_ack(self, stream: Stream, reply: str | None, ack: PubAck) -> None:
        if ack.republish is not None:  # as nats-server: the republish goes out before the ack
            self.router.publish(ack.republish[0], None, ack.republish[1], ack.republish[2])
        if type(reply) is FastReply:  # a fast batch message is persisted: fast_batch.py answers
            reply.on_stored(ack)
            return
        if not reply or stream.config.no_ack:
            return
        if isinstance(ack, BatchAck) and ack.error is None:
            batch_ack: dict[str, Any] = {"stream": stream.name, "seq": ack.seq}
            if self.domain:
                batch_ack["domain"] = self.domain
            batch_ack.update({"batch": ack.batch_id, "count": ack.count})
            self.router.publish(
                reply, None, None, json.dumps(batch_ack, separators=(",", ":")).encode()
            )
            return
        if stream.counter and ack.error is None and not ack.duplicate and ack.msg is not None:
            counted: dict[str, Any] = {"stream": stream.name, "seq": ack.seq}
            if self.domain:
                counted["domain"] = self.domain
            counted["val"] = counters.value_of(ack.msg.data)
            self.router.publish(
                reply, None, None, json.dumps(counted, separators=(",", ":")).encode()
            )
            return
        if ack.error is None and not ack.duplicate:
            # the hot path: one formatted bytes string, no json.dumps per message
            prefix = self._ack_prefix.get(stream.name)
            if prefix is None:
                prefix = b'{"stream":' + json.dumps(stream.name).encode() + b',"seq":'
                self._ack_prefix[stream.name] = prefix
            suffix = self._ack_suffix
            self.router.publish(reply, None, None, b"%s%d%s" % (prefix, ack.seq, suffix))
            return
        body: dict[str, Any]
        if ack.error is not None:
            body = {"error": ack.error.to_json(), "stream": stream.name, "seq": 0}
        else:
            body = {"stream": stream.name, "seq": ack.seq}
            if self.domain:
                body["domain"] = self.domain
            body["duplicate"] = True
        self.router.publish(reply, None, None, json.dumps(body, separators=(",", ":")).encode())

    def _send_raw(self, reply: str, body: bytes) -> None:
        self.router.publish(reply, None, None, body)

    def _arm_sync_timer(self) -> None:
        self._sync_timer = self.clock.call_later(self.sync_interval_s, self._periodic_sync)

    def _periodic_sync(self) -> None:
        self._sync_timer = None
        jobs: list[tuple[Stream, Callable[[], None]]] = []
        for stream in list(self.streams.values()):
            try:
                job = stream.store.begin_sync()
            except Exception:  # keep syncing the others and try again next interval
                logger.exception("stream %s: periodic sync failed", stream.name)
                continue
            if job is not None:
                jobs.append((stream, job))
        run_off_loop = getattr(self.clock, "run_off_loop", None)
        if jobs and run_off_loop is not None:
            run_off_loop(functools.partial(_run_sync_jobs, jobs), self._periodic_synced)
        elif jobs:
            self._periodic_synced(_run_sync_jobs(jobs))
        if self._started:
            self._arm_sync_timer()

    def _periodic_synced(self, result: Any) -> None:
        if isinstance(result, BaseException):
            logger.error("periodic sync failed: %s", result)
            return
        for name, exc in result.items():
            logger.error("stream %s: periodic sync failed: %s", name, exc)
            stream = self.streams.get(name)
            if stream is not None and not stream.closed:
                stream.store.sync_failed()

    # -- account information -------------------------------------------------------------
    def reserved(self, storage: str) -> int:
        return sum(
            s.config.max_bytes for s in self.streams.values()
            if s.config.storage == storage and s.config.max_bytes > 0
        )

    def account_info(self) -> dict[str, Any]:
        """Usage of this account and its limits; like nats-server, the server-wide
        max_memory_store/max_file_store are not account `limits`."""
        return {
            "memory": self.usage("memory"),
            "storage": self.usage("file"),
            "reserved_memory": self.reserved("memory"),
            "reserved_storage": self.reserved("file"),
            "streams": len(self.streams),
            "consumers": sum(len(s.consumers) for s in self.streams.values()),
            "limits": self.account_limits.to_json(),
        }

    def jsz(self) -> dict[str, Any]:
        """Monitoring summary for `/jsz` (field names as nats-server)."""
        states = [s.store.state() for s in self.streams.values()]
        return {
            "config": {
                "max_memory": self.max_memory,
                "max_storage": self.max_storage,
                "store_dir": self.store_dir or "",
                "sync_interval": int(self.sync_interval_s * 1e9),
                "sync_always": self.sync_always,
                **({"domain": self.domain} if self.domain else {}),
            },
            "memory": self.usage("memory"),
            "storage": self.usage("file"),
            "streams": len(self.streams),
            "consumers": sum(len(s.consumers) for s in self.streams.values()),
            "messages": sum(st.msgs for st in states),
            "bytes": sum(st.bytes for st in states),
            "api": {"level": API_LEVEL, "total": self.api_total, "errors": self.api_errors},
        }


def _run_sync_jobs(jobs: list[tuple[Stream, Callable[[], None]]]) -> dict[str, BaseException]:
    """Run `begin_sync()` jobs (any thread); the failures by stream name."""
    failed: dict[str, BaseException] = {}
    for stream, job in jobs:
        try:
            job()
        except Exception as exc:  # reported per stream on the loop thread
            failed[stream.name] = exc
    return failed


def _why(exc: BaseException, directory: Path | None = None) -> str:
    """An error for a client: the OS's words, without absolute paths."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = str(exc)
    if directory is not None:
        text = text.replace(str(directory), directory.name)
    return text


class RouterHost:
    """`ConsumerHost` (consumer/delivery.py) over the router.

    A delivery routes by one subject (the inbox or deliver subject) while
    presenting another (the message's stream subject): the broker offers
    `publish_as(target, subject, reply, headers, payload)`. The router's bound
    methods are taken once, so a delivery costs no call of ours. A router
    without `publish_as` gets the message under the target subject (logged once).
    """

    _warned = False

    def __init__(self, router: Router, clock: Clock, account: str = persistence.ACCOUNT,
                 domain: str = "") -> None:
        self.clock = clock
        self.router = router
        self.account = account  # named in advisories
        self.domain = domain
        self.publish = router.publish
        self.has_interest = router.has_interest
        self.unsubscribe = router.unsubscribe
        publish_as = getattr(router, "publish_as", None)
        self.deliver: Callable[[str, str, str | None, bytes | None, bytes], None] = (
            publish_as if publish_as is not None else self._deliver_to_target
        )

    def subscribe(self, subject: str, handler: MessageHandler) -> int:
        return self.router.subscribe(subject, handler)

    def _deliver_to_target(
        self, target: str, subject: str, reply: str | None, headers: bytes | None, payload: bytes
    ) -> None:
        if not RouterHost._warned:
            RouterHost._warned = True
            logger.warning("router has no publish_as: deliveries carry the inbox subject")
        self.router.publish(target, reply, headers, payload)


class _NoRouter:
    """Placeholder before `start()`: publishing goes nowhere, loudly."""

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        logger.warning("JetStream not started: dropping message to %s", subject)

    def subscribe(self, subject: str, handler: Any, queue: str | None = None) -> int:
        raise RuntimeError("JetStream not started")

    def unsubscribe(self, sub_id: int) -> None:
        return None

    def has_interest(self, subject: str) -> bool:
        return False
