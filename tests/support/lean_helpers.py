"""Connection helpers for tests of the lean client (spark_jetstream.client): options from a
list of servers and option strings, a connection to a test server, and a random source
that keeps the servers in the order listed."""

from __future__ import annotations

import random
from typing import Any

from jetstream_testing.process import ServerProcess
from spark_jetstream.client import LeanConnection
from spark_jetstream.options import ConnectionOptions


def lean_options(*servers: str, **options: str) -> ConnectionOptions:
    return ConnectionOptions.from_options({"servers": ",".join(servers), **options})


def lean_connection(server: ServerProcess) -> LeanConnection:
    return LeanConnection.connect(ConnectionOptions.from_options({"servers": server.url}))


class InOrder(random.Random):
    """Server order as listed (the default is random, like the NATS clients)."""

    def shuffle(self, x: Any, random: Any = None) -> None:  # noqa: ARG002
        return None
