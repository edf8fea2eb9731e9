"""The JetStream service: streams, the `$JS.API` entry and the publish path.

`JetStream(settings, clock)` is a `Service` (core/router.py): `start(router)`
subscribes internally to `$JS.API.>` (and `$JS.<domain>.API.>` with a domain,
both answered by api/dispatch.py through the route table), to `$JS.ACK.>`
(consumer/acks.py) and to every stream's subjects, reopens the streams found
under `<store_dir>/jetstream/$G/streams/` with their durable consumers, and
from then on answers requests and stores published messages. No sockets, no
asyncio; time from the clock.

The engine is the top of the JetStream package: it implements what API
handlers may use (`ApiHost`, api/host.py) and gives consumers the router as a
`ConsumerHost` (consumer/delivery.py) through `RouterHost`. Nothing below
imports it.

Durability: with `sync_always` the pub acks of one loop turn are held, the
touched stores are synced once (group commit) in a callback scheduled with
`clock.call_later(0, ...)`, then acks go out and listeners hear of the
messages, in publish order. Without it acks go right after the OS write and a
periodic `sync()` runs every `sync_interval_s`.

Invariant: nothing raised while handling a message escapes into the broker;
API failures become error responses, publish failures error pub acks.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetstream_server.core.clock import Clock, TimerHandle
from jetstream_server.core.filter_set import BudgetExceeded, FilterSet
from jetstream_server.core.router import MessageHandler, Router
from jetstream_server.jetstream import persistence
from jetstream_server.jetstream.api.consumers import restore_consumers
from jetstream_server.jetstream.api.dispatch import API_PREFIX, dispatch
from jetstream_server.jetstream.consumer.acks import ACK_SUBJECT, AckInbox
from jetstream_server.jetstream.consumer.delivery import ConsumerHost
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.stream import PubAck, Stream
from jetstream_server.jetstream.stream_config import ServerLimits, StreamConfig
from jetstream_server.store.base import StoreError, StreamStore

DEFAULT_MAX_PENDING = 64 * 1024 * 1024  # nats-server's MAX_PENDING_SIZE
logger = logging.getLogger(__name__)

DEFAULT_SYNC_INTERVAL_S = 120.0


def _setting(settings: Any, name: str, default: Any) -> Any:
    value = getattr(settings, name, default)
    return default if value is None else value


def open_stream_store(
    storage: str, directory: Path | None, *, sync_always: bool, sync_interval_s: float
) -> StreamStore:
    """The store backend for a stream (STORE's factory; memory when no directory)."""
    from jetstream_server.store.factory import open_store

    if directory is None:
        storage = "memory"
    return open_store(
        storage,
        None if directory is None else str(directory),
        sync_always=sync_always,
        sync_interval_s=sync_interval_s,
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

    def __init__(self, settings: Any, clock: Clock) -> None:
        self.clock = clock
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
        self.consumer_host: ConsumerHost = RouterHost(self.router, clock)
        self.streams: dict[str, Stream] = {}
        self.api_total = 0
        self.api_errors = 0
        self._stream_subs: dict[str, list[int]] = {}
        # stream directories found at start that did not load: name -> why
        self.unloaded: dict[str, str] = {}
        self._api_subs: list[int] = []
        self._pending: list[tuple[Stream, str | None, PubAck]] = []
        self._dirty: set[str] = set()
        self._flush_timer: TimerHandle | None = None
        self._sync_timer: TimerHandle | None = None
        self._started = False
        self._ack_prefix: dict[str, bytes] = {}
        self._ack_suffix = (
            b',"domain":' + json.dumps(self.domain).encode() + b"}" if self.domain else b"}"
        )

    # -- lifecycle ---------------------------------------------------------------
    def start(self, router: Router) -> None:
        self.router = router
        self.consumer_host = RouterHost(router, self.clock)
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
        if not self.sync_always:
            self._arm_sync_timer()

    def close(self) -> None:
        """Flush pending acks, sync and close every stream."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        self._flush()
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
        for directory in persistence.list_stream_dirs(self.store_dir):
            try:
                meta = persistence.read_meta(directory)
                config = StreamConfig.from_json(meta.config)
            except (OSError, ValueError, ApiError) as exc:
                logger.error("skipping stream directory %s: %s", directory, exc)
                why = _why(exc, directory)
                self.unloaded[directory.name] = f"{persistence.META_FILE} unreadable: {why}"
                continue
            try:
                store = open_stream_store(
                    config.storage,
                    directory,
                    sync_always=self.sync_always,
                    sync_interval_s=self.sync_interval_s,
                )
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

    # -- what handlers use ---------------------------------------------------------
    def respond(self, reply: str | None, body: dict[str, Any]) -> None:
        if reply:
            self.router.publish(reply, None, None, json.dumps(body, separators=(",", ":")).encode())

    def publish(self, subject: str, reply: str | None, headers: bytes | None, payload: bytes) -> None:
        self.router.publish(subject, reply, headers, payload)

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
        return persistence.stream_dir(self.store_dir, name)

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
        limit = self.max_memory if config.storage == "memory" else self.max_storage
        if limit <= 0 or config.max_bytes <= 0:
            return
        reserved = sum(
            max(s.config.max_bytes, 0)
            for s in self.streams.values()
            if s.config.storage == config.storage and s.name != ignore
        )
        if reserved + config.max_bytes > limit:
            raise ApiError(
                Err.MEMORY_RESOURCES_EXCEEDED if config.storage == "memory" else Err.STORAGE_RESOURCES_EXCEEDED
            )

    def _store_limit_check(self) -> Callable[[Stream, int], None] | None:
        """The per-publish store-limit check, or None when the server has no limits."""
        return self._account_check if self.max_memory > 0 or self.max_storage > 0 else None

    def _account_check(self, stream: Stream, size: int) -> None:
        storage = stream.config.storage
        limit = self.max_memory if storage == "memory" else self.max_storage
        if limit <= 0:
            return
        if self.usage(storage) + size > limit:
            # what nats-server answers a publish that would pass the server's store limit
            raise ApiError(Err.INSUFFICIENT_RESOURCES)

    def usage(self, storage: str) -> int:
        return sum(s.store.state().bytes for s in self.streams.values() if s.config.storage == storage)

    def create_stream(self, config: StreamConfig) -> Stream:
        self.check_overlap(config)
        self.check_account_reservation(config)
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
            store = open_stream_store(
                config.storage,
                directory,
                sync_always=self.sync_always,
                sync_interval_s=self.sync_interval_s,
            )
        except Exception as exc:
            if directory is not None:
                persistence.remove_stream_dir(directory)
            logger.exception("could not create the store of stream %s", config.name)
            raise ApiError(Err.STREAM_CREATE, err=str(exc)) from exc
        stream = Stream(
            config, store, self.clock, directory=directory, created_ns=created,
            account_check=self._store_limit_check(),
        )
        self.streams[config.name] = stream
        self._subscribe_stream(stream)
        logger.info("created stream %s", config.name)
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
        stream.update_config(config)
        if subjects_changed:
            self._unsubscribe_stream(stream.name)
            self._subscribe_stream(stream)

    def delete_stream(self, stream: Stream) -> None:
        self._unsubscribe_stream(stream.name)
        self.streams.pop(stream.name, None)
        self._pending = [p for p in self._pending if p[0] is not stream]
        stream.delete()
        if stream.directory is not None:
            persistence.remove_stream_dir(stream.directory)
        logger.info("deleted stream %s", stream.name)

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
        try:
            if not subject.isascii() and not _is_utf8(subject):
                # bytes that are not UTF-8 (kept as surrogates) cannot be stored or
                # shown in API replies; refused with one log line, not a traceback
                logger.info("stream %s: publish subject %r is not UTF-8: refused", stream.name, subject)
                raise ApiError(Err.STREAM_STORE_FAILED, err="subject is not valid UTF-8")
            ack = stream.accept(subject, headers, payload)
        except ApiError as exc:
            ack = PubAck(0, error=exc)
        except (StoreError, OSError) as exc:  # disk full, sequence space: expected, one line
            logger.error("stream %s: storing a message on %s failed: %s", stream.name, subject, exc)
            ack = PubAck(seq=0, error=ApiError(Err.STREAM_STORE_FAILED, err=_why(exc)))
        except Exception as exc:  # a store failure answers the publisher, the server keeps going
            logger.exception("stream %s: storing a message on %s failed", stream.name, subject)
            ack = PubAck(seq=0, error=ApiError(Err.STREAM_STORE_FAILED, err=str(exc)))
        if self.sync_always and (ack.msg is not None or self._pending):
            self._pending.append((stream, reply, ack))
            if ack.msg is not None:
                self._dirty.add(stream.name)
            if self._flush_timer is None:
                self._flush_timer = self.clock.call_later(0, self._flush_from_timer)
            return
        self._send_ack(stream, reply, ack)
        if ack.msg is not None:
            stream.deliver(ack.msg)

    def _flush_from_timer(self) -> None:
        self._flush_timer = None
        self._flush()

    def _flush(self) -> None:
        """Group commit: one sync per touched store, then acks and listeners in order."""
        pending, self._pending = self._pending, []
        dirty, self._dirty = self._dirty, set()
        for name in dirty:
            stream = self.streams.get(name)
            if stream is None:
                continue
            try:
                stream.store.sync()
            except Exception as exc:  # the messages are not durable: tell their publishers
                logger.exception("stream %s: sync failed", name)
                failed = ApiError(Err.STREAM_STORE_FAILED, err=str(exc))
                pending = [
                    (s, r, PubAck(seq=0, error=failed) if s is stream else a) for s, r, a in pending
                ]
        for stream, reply, ack in pending:
            self._send_ack(stream, reply, ack)
            if ack.msg is not None and not stream.closed:
                stream.deliver(ack.msg)

    def _send_ack(self, stream: Stream, reply: str | None, ack: PubAck) -> None:
        if not reply or stream.config.no_ack:
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

    def _arm_sync_timer(self) -> None:
        self._sync_timer = self.clock.call_later(self.sync_interval_s, self._periodic_sync)

    def _periodic_sync(self) -> None:
        self._sync_timer = None
        for stream in list(self.streams.values()):
            try:
                stream.store.sync()
            except Exception:  # keep syncing the others and try again next interval
                logger.exception("stream %s: periodic sync failed", stream.name)
        if self._started:
            self._arm_sync_timer()

    # -- account information -------------------------------------------------------------
    def reserved(self, storage: str) -> int:
        return sum(
            s.config.max_bytes for s in self.streams.values()
            if s.config.storage == storage and s.config.max_bytes > 0
        )

    def account_info(self) -> dict[str, Any]:
        """Usage of the one account; like nats-server, the server-wide
        max_memory_store/max_file_store are not account `limits` (those stay -1)."""
        return {
            "memory": self.usage("memory"),
            "storage": self.usage("file"),
            "reserved_memory": self.reserved("memory"),
            "reserved_storage": self.reserved("file"),
            "streams": len(self.streams),
            "consumers": sum(len(s.consumers) for s in self.streams.values()),
            "limits": {
                "max_memory": -1,
                "max_storage": -1,
                "max_streams": -1,
                "max_consumers": -1,
                "max_ack_pending": -1,
                "memory_max_stream_bytes": -1,
                "storage_max_stream_bytes": -1,
                "max_bytes_required": False,
            },
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
            "api": {"total": self.api_total, "errors": self.api_errors},
        }


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

    def __init__(self, router: Router, clock: Clock) -> None:
        self.clock = clock
        self.router = router
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
