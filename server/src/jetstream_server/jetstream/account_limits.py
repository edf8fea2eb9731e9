"""The checks nats-server makes against an account's JetStream limits.

The limits are `jetstream_server.core.account_limits.AccountLimits` (-1: no
limit); these functions answer with nats-server's errors, in its order:

- stream config (create or update, first): ``max_bytes_required`` and no
  ``max_bytes`` -> 10113; ``max_bytes`` above the account's
  ``mem_max_stream_bytes`` / ``disk_max_stream_bytes`` -> 10122
  (nats-server's checkStreamCfg);
- stream create: `max_streams` reached -> 10027 "maximum number of streams
  reached"; then `check_stream_config`;
- stream create or update (`check_stream_config`): a stream `max_consumers`
  above the account's -> 10026 "maximum consumers limit reached"; the bytes
  the stream reserves (its `max_bytes`, 1 when unset) beyond what the other
  streams left of `max_mem` / `max_file` -> 10028 / 10047
  (nats-server's jsNonClusteredStreamLimitsCheck and checkBytesLimits);
- consumer create: the cap is the smaller of the stream's and the account's
  `max_consumers`, counted per stream as nats-server does -> 10026
  (`AccountLimits.consumer_cap`);
- publish: a message that would take the account's memory or file usage
  past its limit -> 10002 "resource limits exceeded for account"
  (`AccountLimits.exceeded_by`, checked by the engine).

Invariant: limits of -1 never refuse anything.
"""

from __future__ import annotations

from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.jetstream.errors import ApiError, Err

UNLIMITED = AccountLimits()


def check_new_stream(
    limits: AccountLimits,
    num_streams: int,
    max_consumers: int,
    storage: str,
    max_bytes: int,
    reserved: int,
) -> None:
    """A stream create in an account that has `num_streams` streams and
    `reserved` bytes reserved by its streams of the same storage."""
    check_max_bytes(limits, storage, max_bytes)
    if limits.max_streams > 0 and num_streams >= limits.max_streams:
        raise ApiError(Err.MAXIMUM_STREAMS_LIMIT)
    check_stream_config(limits, max_consumers, storage, max_bytes, reserved)


def check_max_bytes(limits: AccountLimits, storage: str, max_bytes: int) -> None:
    if limits.max_bytes_required and max_bytes <= 0:
        raise ApiError(Err.STREAM_MAX_BYTES_REQUIRED)
    cap = limits.memory_max_stream_bytes if storage == "memory" else limits.storage_max_stream_bytes
    if cap > 0 and max_bytes > cap:
        raise ApiError(Err.STREAM_MAX_STREAM_BYTES_EXCEEDED)


def check_stream_config(
    limits: AccountLimits, max_consumers: int, storage: str, max_bytes: int, reserved: int
) -> None:
    """A stream config (create or update) against the account's limits."""
    check_max_bytes(limits, storage, max_bytes)
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
