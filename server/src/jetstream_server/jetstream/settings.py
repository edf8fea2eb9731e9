"""What the JetStream engine reads of the server's configuration, typed and frozen.

`EngineSettings` is built once by whoever starts an engine: the app from the
configuration (`jetstream_server.app.accounts.engine_settings`: the
``jetstream { ... }`` block, the store limits nats-server computes from the
machine, `max_pending` and the server's name), tests and the fuzz harness
directly. Every account's engine of a server gets the same settings; what
differs per account (its name and `AccountLimits`) is given to the engine
beside them. `ServerLimits` is the ``jetstream { limits { ... } }`` block as
the API applies it.

Invariants: frozen (nothing changes an engine's settings while it runs);
`sync_interval_s` is positive (0 or less: nats-server's two minutes); a
store limit of 0 or less is no limit and reads -1, as `/jsz` reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

DEFAULT_SYNC_INTERVAL_S: Final = 120.0  # nats-server's sync_interval
DEFAULT_MAX_PENDING: Final = 64 * 1024 * 1024  # nats-server's MAX_PENDING_SIZE


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """``jetstream { limits { ... } }`` as the API applies them (0: no limit)."""

    max_ack_pending: int = 0
    max_request_batch: int = 0
    duplicate_window_ns: int = 0


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """The settings of a JetStream engine (see module docstring)."""

    # where streams are stored (<store_dir>/jetstream/<account>/streams); None:
    # nothing is persisted, file streams are kept in memory
    store_dir: str | None = None
    domain: str = ""  # the JetStream domain ("" when none)
    sync_always: bool = False  # fsync before a pub ack (group commit) and consumer state writes
    sync_interval_s: float = DEFAULT_SYNC_INTERVAL_S  # the periodic sync otherwise
    max_memory_store: int = -1  # the server's store limits, over every account (-1: none)
    max_file_store: int = -1
    limits: ServerLimits = field(default_factory=ServerLimits)
    max_pending: int = DEFAULT_MAX_PENDING  # a direct-get batch sends no more bytes
    server_name: str = ""  # the leader stream info names, the `server` of API audits

    def __post_init__(self) -> None:
        # frozen: the normalised values are set once, here
        if self.sync_interval_s <= 0:
            object.__setattr__(self, "sync_interval_s", DEFAULT_SYNC_INTERVAL_S)
        if self.max_memory_store <= 0:
            object.__setattr__(self, "max_memory_store", -1)
        if self.max_file_store <= 0:
            object.__setattr__(self, "max_file_store", -1)
