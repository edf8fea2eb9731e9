"""Which services run inside the server.

`build_services` is the one place the server learns about its services
(JetStream). Each service gets `start(router)` on the loop thread before the
listener accepts clients and `close()` on shutdown, after the listener stops.
"""

from __future__ import annotations

from jetstream_server.config import ServerConfig
from jetstream_server.core.clock import Clock
from jetstream_server.core.router import Service
from jetstream_server.jetstream.engine import JetStream


def build_services(config: ServerConfig, clock: Clock) -> list[Service]:
    """The services for a server with `config`; time comes from `clock`."""
    return [JetStream(config.jetstream, clock)]
