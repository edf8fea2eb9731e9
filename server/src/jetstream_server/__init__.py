"""The bundled JetStream server: a NATS server with JetStream, in pure Python.

`from jetstream_server import EmbeddedServer` runs one in a background thread; the
`jetstream-server` command (`python -m jetstream_server`) runs one as a process. The
import is lazy so that `python -m jetstream_server` and the sans-IO modules do not load
the asyncio layer until it is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jetstream_server.embedded import EmbeddedServer

__all__ = ["EmbeddedServer"]


def __getattr__(name: str) -> Any:
    if name == "EmbeddedServer":
        from jetstream_server.embedded import EmbeddedServer

        return EmbeddedServer
    raise AttributeError(f"module 'jetstream_server' has no attribute {name!r}")
