"""What a user gets from `pip install`: each distribution alone, in a fresh
virtual environment, and no clash with a user's own `server.py` or `jobs/`.

- `./server` (jetstream-server) alone pulls in nothing (no pyspark, pyarrow or
  nats-py) and its `jetstream-server -p -1 -js` command serves clients;
- `.` (spark-jetstream) alone brings pyspark and pyarrow, not nats-py and not
  the server, and `format("jetstream")` writes to and reads from a real
  nats-server;
- every installed distribution of this repository puts only its own
  distinctive top-level packages into site-packages, so a user project with a
  `server.py` and a `jobs/` package imports its own modules and ours side by side.

The fresh environments install from the repository's own directories with
pip, as a user would (build isolation included); pyspark comes from pip's cache
when it is there. The two are built side by side, once per module.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import venv
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from jetstream_testing.process import ServerProcess, nats_server_binary

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
# spark-jetstream's second package is the module Spark's own lookup registers (pyspark_*)
OURS = {"jetstream-server": {"jetstream_server"}, "spark-jetstream": {"spark_jetstream", "pyspark_jetstream"},
        "jetstream-testing": {"jetstream_testing"}}


_CREATING = threading.Lock()


def _fresh_venv(path: Path) -> Path:
    # Built side by side: a copied interpreter being written in one thread while the
    # other forks is still open for writing in that child, and exec'ing it fails with
    # ETXTBSY ("Text file busy"). The interpreter is linked, not copied, and one
    # environment is created at a time (their pip installs still overlap).
    with _CREATING:
        venv.EnvBuilder(with_pip=True, clear=True, symlinks=True).create(path)
    return path / "bin" / "python"


def _pip_install(python: Path, *targets: str, timeout: float = 900) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *targets],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )
    assert done.returncode == 0, f"pip install {targets} failed:\n{done.stdout}\n{done.stderr}"


def _venv_with(path: Path, target: str) -> Path:
    python = _fresh_venv(path)
    _pip_install(python, target)
    return python


# the fresh environment each test installs into: (directory name, pip target)
FRESH = {
    "test_server_alone_has_no_dependencies_and_serves": ("server", "./server"),
    "test_connector_alone_reads_and_writes_a_real_nats_server": ("connector", "."),
}


@pytest.fixture(scope="module")
def fresh_installs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Path]]]:
    """The fresh environments of the selected tests (`./server` alone, `.` alone), built at
    once in two threads (pip waits mostly on the disk and its subprocesses); each test
    waits for its own."""
    root = tmp_path_factory.mktemp("fresh-installs")
    selected = {getattr(item, "originalname", item.name) for item in request.session.items}
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="fresh-venv") as pool:
        yield {target: pool.submit(_venv_with, root / name, target)
               for test, (name, target) in FRESH.items() if test in selected}


def _installed(python: Path) -> set[str]:
    """Distribution names seen by `python`, run outside the repository (whose build
    leftovers, such as an egg-info directory, would count when the root is the cwd)."""
    out = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, json; "
         "print(json.dumps(sorted(d.metadata['Name'].lower() for d in m.distributions())))"],
        capture_output=True, text=True, timeout=60, check=True, cwd=python.parent,
    ).stdout
    return set(json.loads(out))


def _run(python: Path, code: str, *, cwd: Path, timeout: float = 300,
         env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(python), "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
        timeout=timeout, check=False, env=env,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-4000:]}"
    return done.stdout


def test_server_alone_has_no_dependencies_and_serves(
    fresh_installs: dict[str, Future[Path]], tmp_path: Path
) -> None:
    python = fresh_installs["./server"].result()
    installed = _installed(python)
    assert "jetstream-server" in installed
    assert not installed & {"pyspark", "pyarrow", "nats-py", "py4j", "spark-jetstream"}, installed
    command = [str(python.parent / "jetstream-server")]
    # the speedups' default (auto) without the extra: asyncio's loop, said in the log; the
    # build's default (auto) on a machine with a C compiler: the hot modules compiled
    env = {**os.environ, "JETSTREAM_SPEEDUPS": "auto"}
    with ServerProcess(command, store_dir=tmp_path / "store", env=env) as srv:
        assert srv.wait_for_log(r"Speedups: none, event loop asyncio, JSON json, CRC-32 zlib \(not installed")
        assert srv.wait_for_log(r"Build: hot modules compiled \(mypyc\)")
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
            sock.settimeout(10)
            info = sock.recv(4096)
            assert info.startswith(b"INFO {"), info
            assert json.loads(info[5:].split(b"\r\n")[0])["jetstream"] is True
            sock.sendall(b"CONNECT {\"verbose\":false}\r\nPING\r\n")
            assert sock.recv(64).startswith(b"PONG")


@pytest.mark.timeout(1500)
def test_connector_alone_reads_and_writes_a_real_nats_server(
    fresh_installs: dict[str, Future[Path]], tmp_path: Path
) -> None:
    python = fresh_installs["."].result()
    installed = _installed(python)
    assert {"spark-jetstream", "pyspark", "pyarrow"} <= installed
    assert not installed & {"jetstream-server", "nats-py", "jetstream-testing"}, installed
    with ServerProcess([nats_server_binary()], store_dir=tmp_path / "store") as srv:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
        out = _run(python, f"""
            import json, socket
            from spark_jetstream import register
            from spark_jetstream.local import local_spark_session

            # create the stream through the JetStream API with a bare socket:
            # nothing but the connector is installed here
            with socket.create_connection(("127.0.0.1", {srv.port}), timeout=10) as s:
                s.recv(4096)
                body = json.dumps({{"name": "PKG", "subjects": ["pkg.>"]}}).encode()
                s.sendall(b'CONNECT {{"verbose":false}}\\r\\nSUB _R 1\\r\\n'
                          + b"PUB $JS.API.STREAM.CREATE.PKG _R %d\\r\\n" % len(body) + body + b"\\r\\n")
                reply = b""
                while b"MSG _R" not in reply or not reply.endswith(b"\\r\\n"):
                    reply += s.recv(65536)
                assert b'"error"' not in reply, reply

            spark = local_spark_session("packaging-test", cores=1)
            register(spark)
            url = "nats://127.0.0.1:{srv.port}"
            rows = spark.createDataFrame([(f"m{{i}}",) for i in range(25)], "data string")
            rows.write.format("jetstream").option("servers", url).option("subject", "pkg.a").mode("append").save()
            back = spark.read.format("jetstream").option("servers", url).option("stream", "PKG").load()
            got = sorted(r.data.decode() for r in back.collect())
            print(json.dumps(got))
            spark.stop()
        """, cwd=tmp_path, timeout=900, env=env)
    assert json.loads(out.strip().splitlines()[-1]) == sorted(f"m{i}" for i in range(25))


def test_installed_distributions_add_only_distinctive_top_level_packages() -> None:
    for dist_name, expected in OURS.items():
        dist = importlib.metadata.distribution(dist_name)
        tops = {
            Path(str(f)).parts[0]
            for f in dist.files or ()
            if not Path(str(f)).parts[0].endswith((".dist-info", ".egg-info"))
            and Path(str(f)).parts[0] not in ("..", "bin")
        }
        tops = {t.removesuffix(".py") for t in tops if not t.endswith(".pth")}
        # the compiled server's runtime library (server/setup.py), named after its package
        tops = {t.split(".")[0] if t.endswith(".so") else t for t in tops} - {"jetstream_server__mypyc"}
        assert tops == expected, f"{dist_name} installs top-level {sorted(tops)}"


def test_a_user_project_with_its_own_server_and_jobs_imports_both(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    (project / "server.py").write_text("WHO = 'the user server module'\n")
    (project / "jobs" / "__init__.py").write_text("WHO = 'the user jobs package'\n")
    out = _run(Path(sys.executable), """
        import server, jobs
        from jetstream_server import EmbeddedServer
        import spark_jetstream
        assert server.WHO == "the user server module", server.__file__
        assert jobs.WHO == "the user jobs package", jobs.__file__
        with EmbeddedServer(port=0) as srv:
            print(srv.url)
        print(spark_jetstream.JetStreamDataSource.name())
    """, cwd=project, timeout=120)
    lines = out.split()
    assert lines[0].startswith("nats://127.0.0.1:") and lines[-1] == "jetstream"


def test_without_a_c_compiler_the_server_installs_as_pure_python(tmp_path: Path) -> None:
    """server/setup.py's default (auto): when compiling fails (here the C compiler is `false`),
    the build says why and installs the pure-Python server, which serves. A copy of server/ is
    built, so that this build and the fresh install above do not share a build directory."""
    import shutil

    source = tmp_path / "server"
    shutil.copytree(ROOT / "server", source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    python = _fresh_venv(tmp_path / "venv")
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-v", str(source)],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "CC": "false", "JETSTREAM_SERVER_COMPILE": "auto"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "compiling failed" in done.stdout + done.stderr
    out = _run(python, """
        from jetstream_server import EmbeddedServer
        from jetstream_server.app.speedups import build_line
        with EmbeddedServer(port=0) as srv:
            print(build_line(), srv.url)
    """, cwd=tmp_path, timeout=120)
    assert out.startswith("Build: pure Python") and "nats://127.0.0.1:" in out, out
    site = {p.name for p in (tmp_path / "venv").glob("lib/python*/site-packages/*")}
    assert not {name for name in site if "mypyc" in name}, site
