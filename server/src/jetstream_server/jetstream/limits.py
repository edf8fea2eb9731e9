"""What an account and the server may store: usage, reservations and nats-server's limit checks.

`StoreLimits` watches one account's streams (the engine's `streams`, shared,
never copied) against two sets of limits: the account's
(`jetstream_server.core.account_limits.AccountLimits`, -1: no limit) and the
server's store limits (`max_memory_store` / `max_file_store`, over every
account together: `peers` holds the `StoreLimits` of every account's engine
when there are several). The checks answer with nats-server's errors, in its
order:

- stream config (create or update, first): ``max_bytes_required`` and no
  ``max_bytes`` -> 10113; ``max_bytes`` above the account's
  ``mem_max_stream_bytes`` / ``disk_max_stream_bytes`` -> 10122
  (nats-server's checkStreamCfg);
- stream create: `max_streams` reached -> 10027 "maximum number of streams
  reached"; then the config check below;
- stream create or update: a stream `max_consumers` above the account's ->
  10026 "maximum consumers limit reached"; the bytes the stream reserves (its
  `max_bytes`, 1 when unset) beyond what the other streams left of `max_mem` /
  `max_file` -> 10028 / 10047 (jsNonClusteredStreamLimitsCheck and
  checkBytesLimits); then the reservations of every account against the
  server's store limit -> 10028 / 10047;
- consumer create: the cap is the smaller of the stream's and the account's
  `max_consumers`, counted per stream as nats-server does -> 10026
  (`AccountLimits.consumer_cap`, applied by the API);
- publish (`publish_check`, handed to each stream): a message that would take
  the account's memory or file usage past its limit -> 10002 "resource limits
  exceeded for account"; past the server's store limit -> 10023 "insufficient
  resources";
- restore (`check_restore_room`): the bytes of a snapshot as they arrive, against
  the account's and the server's limits -> 10028 / 10047.

Invariant: limits of -1 (or a server limit of 0 or less) never refuse anything.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.jetstream.errors import ApiError, Err
from jetstream_server.jetstream.stream import Stream
from jetstream_server.jetstream.stream_config import Storage, StreamConfig

UNLIMITED = AccountLimits()


class StoreLimits:
    """One account's store usage and the limits that bound it (see module docstring).

    Usage and reservations are running totals, not sums over the streams: the
    engine `track`s a stream when it is served (created, loaded, restored, its
    config updated) and `untrack`s it when it goes or before its config
    changes; a tracked stream's store reports every change of its messages and
    bytes (`StreamStore.on_change`, as nats-server's stores report theirs).
    A check, a publish and `$JS.API.INFO` cost the same with 5 or 5,000
    streams."""

    def __init__(
        self,
        streams: Mapping[str, Stream],
        account: AccountLimits = UNLIMITED,
        *,
        max_memory: int = -1,
        max_storage: int = -1,
    ) -> None:
        self.streams = streams
        self.account = account
        self.max_memory = max_memory  # the server's, over every account (<= 0: none)
        self.max_storage = max_storage
        # every account's limits on this server, this one included (set by the
        # server when several accounts have JetStream): the server's store
        # limits are checked against their sum
        self.peers: list[StoreLimits] = []
        self._bytes: dict[Storage, int] = {"memory": 0, "file": 0}
        self._reserved: dict[Storage, int] = {"memory": 0, "file": 0}
        self.messages = 0  # in every tracked stream
        # what each tracked stream counts for: its storage and reservation
        self._tracked: dict[str, tuple[Storage, int]] = {}

    # -- running totals ------------------------------------------------------------
    def track(self, stream: Stream) -> None:
        """`stream` counts from now on: its reservation, its store's bytes and
        messages (and every change its store reports)."""
        if stream.name in self._tracked:
            self.untrack(stream)
        cfg = stream.config
        storage, reserved = cfg.storage, max(cfg.max_bytes, 0)
        self._tracked[stream.name] = (storage, reserved)
        self._reserved[storage] += reserved
        store = stream.store
        self._bytes[storage] += store.stored_bytes()
        self.messages += store.state().msgs
        store.on_change = functools.partial(self._changed, storage)

    def untrack(self, stream: Stream) -> None:
        """`stream` no longer counts (deleted, closed, or about to change its config)."""
        tracked = self._tracked.pop(stream.name, None)
        if tracked is None:
            return
        storage, reserved = tracked
        self._reserved[storage] -= reserved
        store = stream.store
        store.on_change = None
        self._bytes[storage] -= store.stored_bytes()
        self.messages -= store.state().msgs

    def _changed(self, storage: Storage, msgs: int, size: int) -> None:
        self._bytes[storage] += size
        self.messages += msgs

    # -- usage ---------------------------------------------------------------------
    def usage(self, storage: Storage) -> int:
        """Bytes this account stores in `storage`."""
        return self._bytes[storage]

    def reserved(self, storage: Storage) -> int:
        """Bytes this account's streams reserve with their `max_bytes`."""
        return self._reserved[storage]

    def server_usage(self, storage: Storage) -> int:
        """Bytes stored by every account of the server."""
        return sum(p.usage(storage) for p in self.peers) if self.peers else self.usage(storage)

    def server_reserved(self, storage: Storage) -> int:
        return sum(p.reserved(storage) for p in self.peers) if self.peers else self.reserved(storage)

    def server_limit(self, storage: Storage) -> int:
        return self.max_memory if storage == "memory" else self.max_storage

    # -- checks ----------------------------------------------------------------------
    def check_reservation(self, config: StreamConfig, ignore: str | None = None) -> None:
        """A stream create (`ignore` None) or update of the stream `ignore`: its
        config against the account's limits, and its `max_bytes` against what is
        left of the account's and the server's store."""
        storage = config.storage
        reserved_here = self._reserved[storage]
        if ignore is not None:
            own = self._tracked.get(ignore)
            if own is not None and own[0] == storage:
                reserved_here -= own[1]
        acc = self.account
        if ignore is None:
            _check_max_bytes(acc, storage, config.max_bytes)
            if acc.max_streams > 0 and len(self.streams) >= acc.max_streams:
                raise ApiError(Err.MAXIMUM_STREAMS_LIMIT)
        _check_stream_config(acc, config.max_consumers, storage, config.max_bytes, reserved_here)
        limit = self.server_limit(storage)
        if limit <= 0 or config.max_bytes <= 0:
            return
        reserved = reserved_here + self.server_reserved(storage) - self.reserved(storage)
        if reserved + config.max_bytes > limit:
            raise ApiError(_resources_exceeded(storage))

    def publish_check(self) -> Callable[[Stream, int], None] | None:
        """The per-publish store-limit check a stream runs before storing, or
        None when neither the server nor the account has limits."""
        acc = self.account
        limited = (
            self.max_memory > 0 or self.max_storage > 0
            or acc.max_memory >= 0 or acc.max_storage >= 0
        )
        return self._check_publish if limited else None

    def _check_publish(self, stream: Stream, size: int) -> None:
        storage = stream.config.storage
        used = self.usage(storage)
        if self.account.exceeded_by(storage, used, size):
            # nats-server's answer when the account's own limit would be passed
            raise ApiError(Err.ACCOUNT_RESOURCES_EXCEEDED)
        limit = self.server_limit(storage)
        if limit <= 0:
            return
        if (self.server_usage(storage) if self.peers else used) + size > limit:
            # what nats-server answers a publish that would pass the server's store limit
            raise ApiError(Err.INSUFFICIENT_RESOURCES)

    def check_restore_room(self, storage: Storage, size: int) -> None:
        """`size` more bytes of a restore must fit the account's and the server's limits."""
        if self.account.exceeded_by(storage, self.usage(storage), size):
            raise ApiError(_resources_exceeded(storage))
        limit = self.server_limit(storage)
        if limit > 0 and self.server_usage(storage) + size > limit:
            raise ApiError(_resources_exceeded(storage))


def _resources_exceeded(storage: Storage) -> Err:
    return Err.MEMORY_RESOURCES_EXCEEDED if storage == "memory" else Err.STORAGE_RESOURCES_EXCEEDED


def _check_max_bytes(limits: AccountLimits, storage: Storage, max_bytes: int) -> None:
    if limits.max_bytes_required and max_bytes <= 0:
        raise ApiError(Err.STREAM_MAX_BYTES_REQUIRED)
    cap = limits.memory_max_stream_bytes if storage == "memory" else limits.storage_max_stream_bytes
    if cap > 0 and max_bytes > cap:
        raise ApiError(Err.STREAM_MAX_STREAM_BYTES_EXCEEDED)


def _check_stream_config(
    limits: AccountLimits, max_consumers: int, storage: Storage, max_bytes: int, reserved: int
) -> None:
    """A stream config (create or update) against the account's limits, with
    `reserved` bytes reserved by the account's other streams of its storage."""
    _check_max_bytes(limits, storage, max_bytes)
    if max_consumers > 0 and limits.max_consumers > 0 and max_consumers > limits.max_consumers:
        raise ApiError(Err.MAXIMUM_CONSUMERS_LIMIT)
    add = max_bytes if max_bytes > 0 else 1
    if storage == "memory":
        if limits.max_memory >= 0 and (reserved > limits.max_memory or add > limits.max_memory - reserved):
            raise ApiError(Err.MEMORY_RESOURCES_EXCEEDED)
    elif limits.max_storage >= 0 and (
        reserved > limits.max_storage or add > limits.max_storage - reserved
    ):
        raise ApiError(Err.STORAGE_RESOURCES_EXCEEDED)
