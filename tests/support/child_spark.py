"""The Spark settings of the crash tests' child drivers (crash_pipeline.py, latest_pipeline.py):
a quick start-up, the same query.

Each kill of a crash test costs a fresh driver JVM and fresh Python planner and worker processes,
so their start-up sets the test's time. The parent starts a child with `child_env()`, and the child
builds its session with `child_conf()`:
- the driver JVM: C1 only and the serial GC (a short life) and, when the parent has one, the class
  archive of `jvm_class_archive.py` (its path in `ARCHIVE_ENV`);
- Spark's Python processes: the connector's `worker_site/` on PYTHONPATH (Spark appends it to
  theirs; `spark_jetstream.local.WORKER_SITE`, what `local_spark_session` does for the JVM it
  starts), whose `sitecustomize` has them import the installed pyspark from its bytecode
  instead of compiling `pyspark.zip` in every process;
- four shuffle partitions.
None of these changes what a query reads, writes or commits, nor its checkpoint. Other Spark
drivers of the suite take what fits them: `worker_site_path()` (the shared session, the clusters
benchmark's jobs, spark-submit drivers, the Connect server), `java_options()` with an existing
archive (the shared session's and the Connect server's JVMs), `jvm_environment()` to hand a JVM
started in this process its environment.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from spark_jetstream.local import WORKER_SITE as _WORKER_SITE
from spark_jetstream.local import use_worker_site

JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ARCHIVE_ENV = "JS_TEST_JVM_CLASS_ARCHIVE"
WORKER_SITE = Path(_WORKER_SITE)


def worker_site_path() -> str:
    """PYTHONPATH with `worker_site` first: for a driver whose Spark starts Python processes."""
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    use_worker_site(env)
    return env["PYTHONPATH"]


@contextlib.contextmanager
def jvm_environment(**variables: str) -> Iterator[None]:
    """`variables` set in os.environ while a JVM starts in this process (it inherits them: the
    suite's shared session, a Spark Connect server), restored after."""
    previous = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def child_env(archive: Path | None) -> dict[str, str]:
    """The environment of a child driver: this one, `worker_site` on PYTHONPATH, the archive."""
    env = dict(os.environ)
    env["PYTHONPATH"] = worker_site_path()
    env.pop(ARCHIVE_ENV, None)
    if archive is not None:
        env[ARCHIVE_ENV] = str(archive)
    return env


def java_options(archive: str | os.PathLike[str] | None) -> str:
    """The driver JVM's options: `JAVA_OPTIONS`, and the class archive when there is one."""
    return f"{JAVA_OPTIONS} -XX:SharedArchiveFile={archive}" if archive else JAVA_OPTIONS


def child_conf() -> dict[str, str]:
    """The Spark conf of a child driver's local session (in the child: reads `ARCHIVE_ENV`)."""
    options = java_options(os.environ.get(ARCHIVE_ENV))
    return {"spark.driver.extraJavaOptions": options, "spark.sql.shuffle.partitions": "4"}
