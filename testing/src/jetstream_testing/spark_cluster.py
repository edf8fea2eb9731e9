"""A Spark standalone cluster on loopback, started from the pip package of pyspark.

`SparkStandalone(base_dir, workers=2, env=...)` runs one master and `workers` workers
(`<pyspark>/bin/spark-class org.apache.spark.deploy.master.Master` / `...Worker`),
each in its own process group, bound to 127.0.0.1 with kernel-chosen ports
(learned from their logs), work directories under `base_dir`. Executors are
separate JVMs the workers launch; their Python workers run whatever
`spark.pyspark.python` the application names.

`worker_env(base_dir)` makes the Python of a machine that has only the
connector's runtime dependencies besides pyspark (pyarrow, numpy) and not the
connector: a venv without pip whose only site entry points at those packages
(and a package's bundled shared libraries, `<name>.libs`, beside it). A job
whose executors use it can only import `spark_jetstream` from what the job
ships (`--py-files`).

Invariants: `start()` returns once every worker registered with the master;
`stop()` (and a failed start) kills every process group it started, executors
included.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

_MASTER_RE = re.compile(r"Starting Spark master at (spark://\S+)")
_REGISTERED_RE = re.compile(r"Successfully registered with master")


def spark_home() -> Path:
    """The pip-installed pyspark package directory (it is a SPARK_HOME: bin/, jars/, sbin/)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("pyspark is not installed")
    return Path(spec.origin).parent


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"{name} is not installed")
    return Path(spec.origin).parent


def worker_env(base_dir: str | os.PathLike[str], packages: tuple[str, ...] = ("pyarrow", "numpy")) -> Path:
    """The python executable of a fresh venv that can import only `packages` (and the
    standard library); pyspark itself comes from Spark's PYTHONPATH on executors."""
    root = Path(base_dir)
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(root)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    links = root / "shared-packages"
    links.mkdir()
    for name in packages:
        found = _package_dir(name)
        (links / name).symlink_to(found, target_is_directory=True)
        bundled = found.with_name(f"{name}.libs")  # a manylinux wheel's shared libraries
        if bundled.is_dir():
            (links / bundled.name).symlink_to(bundled, target_is_directory=True)
    Path(site, "shared-packages.pth").write_text(f"{links}\n", encoding="utf-8")
    return python


class _Daemon:
    """One spark-class process in its own process group, its log pumped to a file and memory."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        with self.log_path.open("a", encoding="utf-8") as sink:
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip()
                sink.write(line + "\n")
                with self._changed:
                    self.lines.append(line)
                    if len(self.lines) > 2000:
                        del self.lines[:500]
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, regex: re.Pattern[str], timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    if (m := regex.search(line)) is not None:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    tail = "\n".join(self.lines[-30:])
                    raise RuntimeError(f"{regex.pattern!r} not logged (see {self.log_path}):\n{tail}")
                self._changed.wait(min(left, 0.5))

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(15)
            except ProcessLookupError:
                pass


class SparkStandalone:
    """A master and `workers` workers; `master_url` once started."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        workers: int = 2,
        *,
        cores: int = 1,
        memory: str = "1g",
        startup_timeout: float = 120.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.extra_env = dict(env or {})
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.startup_timeout = startup_timeout
        self.master_url = ""
        self._daemons: list[_Daemon] = []

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(self.base_dir / "logs"),
            # the daemons are small: C1 only, serial GC, a modest heap
            SPARK_DAEMON_MEMORY="256m",
            SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        )
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.update(self.extra_env)
        return env

    def _spark_class(self, cls: str, *args: str, log: str) -> _Daemon:
        argv = [str(spark_home() / "bin" / "spark-class"), cls, *args]
        daemon = _Daemon(argv, self._env(), self.base_dir / log)
        self._daemons.append(daemon)
        return daemon

    def start(self) -> SparkStandalone:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        try:
            master = self._spark_class(
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                log="master.log",
            )
            self.master_url = master.wait_for(_MASTER_RE, self.startup_timeout).group(1)
            started = [
                self._spark_class(
                    "org.apache.spark.deploy.worker.Worker",
                    "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                    "--cores", str(self.cores), "--memory", self.memory,
                    "--work-dir", str(self.base_dir / f"worker{i}"),
                    self.master_url,
                    log=f"worker{i}.log",
                )
                for i in range(self.workers)
            ]
            for worker in started:
                worker.wait_for(_REGISTERED_RE, self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for daemon in reversed(self._daemons):
            daemon.stop()
        self._daemons = []

    def __enter__(self) -> SparkStandalone:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
