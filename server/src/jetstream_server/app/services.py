"""Which services run inside the server, and the JetStream defaults that need the machine.

`with_store_defaults` fills in `max_memory_store` / `max_file_store` left
unset (-1) as nats-server does at start: 75 % of the machine's memory (256
MB when it cannot be read) and 75 % of the space available where the streams
are stored (1 TB when that cannot be read; the temporary directory when no
store directory is configured).
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import replace
from typing import Final

from jetstream_server.config import JetStreamSettings, ServerConfig
from jetstream_server.core.clock import Clock
from jetstream_server.core.router import Service
from jetstream_server.jetstream.engine import JetStream

log = logging.getLogger(__name__)

MAX_STORE_FALLBACK: Final = 1024**4  # nats-server's JetStreamMaxStoreDefault
MAX_MEMORY_FALLBACK: Final = 256 * 1024**2  # nats-server's JetStreamMaxMemDefault


def system_memory() -> int:
    """Total physical memory in bytes, 0 when it cannot be read."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (OSError, ValueError, AttributeError):
        return 0


def disk_available(path: str) -> int:
    """75 % of the space available to unprivileged users under `path` (or its
    nearest existing parent); the 1 TB fallback when it cannot be read."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    try:
        st = os.statvfs(probe)
    except OSError:
        return MAX_STORE_FALLBACK
    return st.f_bavail * st.f_bsize // 4 * 3


def with_store_defaults(settings: JetStreamSettings) -> JetStreamSettings:
    """`settings` with nats-server's computed store limits where they are unset (-1)."""
    max_memory = settings.max_memory_store
    if max_memory < 0:
        memory = system_memory()
        max_memory = memory // 4 * 3 if memory > 0 else MAX_MEMORY_FALLBACK
    max_file = settings.max_file_store
    if max_file < 0:
        max_file = disk_available(settings.store_dir or os.path.join(tempfile.gettempdir(), "nats"))
    return replace(settings, max_memory_store=max_memory, max_file_store=max_file)
