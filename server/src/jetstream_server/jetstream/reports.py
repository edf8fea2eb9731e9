"""What an engine reports about its account: `$JS.API.INFO`'s usage and `/jsz`.

Snapshots computed on demand from the account's `StoreLimits` (limits.py:
the streams, the running totals of their usage, messages and reservations,
the limits) and the engine's settings; field names are nats-server's. No
store is asked: an answer costs the same with 5 or 5,000 streams (the
consumer count aside, one `len` per stream). Nothing here changes state.
"""

from __future__ import annotations

from typing import Any

from jetstream_server.jetstream.limits import StoreLimits
from jetstream_server.jetstream.settings import EngineSettings
from jetstream_server.jetstream.versioning import API_LEVEL


def account_info(limits: StoreLimits) -> dict[str, Any]:
    """Usage of the account and its limits (`$JS.API.INFO` without `domain` and
    `api`); like nats-server, the server-wide max_memory_store/max_file_store are
    not account `limits`."""
    streams = limits.streams.values()
    return {
        "memory": limits.usage("memory"),
        "storage": limits.usage("file"),
        "reserved_memory": limits.reserved("memory"),
        "reserved_storage": limits.reserved("file"),
        "streams": len(streams),
        "consumers": sum(len(s.consumers) for s in streams),
        "limits": limits.account.to_json(),
    }


def jsz(
    settings: EngineSettings, limits: StoreLimits, api_total: int, api_errors: int
) -> dict[str, Any]:
    """The account's part of `/jsz` (nats-server's field names)."""
    streams = limits.streams.values()
    return {
        "config": {
            "max_memory": settings.max_memory_store,
            "max_storage": settings.max_file_store,
            "store_dir": settings.store_dir or "",
            "sync_interval": int(settings.sync_interval_s * 1e9),
            "sync_always": settings.sync_always,
            **({"domain": settings.domain} if settings.domain else {}),
        },
        "memory": limits.usage("memory"),
        "storage": limits.usage("file"),
        "streams": len(streams),
        "consumers": sum(len(s.consumers) for s in streams),
        "messages": limits.messages,
        "bytes": limits.usage("memory") + limits.usage("file"),
        "api": {"level": API_LEVEL, "total": api_total, "errors": api_errors},
    }
