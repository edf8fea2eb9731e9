"""A class-data-sharing archive of Spark's JVM classes for the crash tests' child Spark drivers.

A crash test starts a fresh Spark driver JVM after every kill; loading and verifying Spark's
classes from its jars is most of its 5 s start-up. A dynamic CDS archive (JDK 13+:
`-XX:ArchiveClassesAtExit` in one run, `-XX:SharedArchiveFile` in the next) holds them parsed and
verified: the session starts in about half the time, and the first queries run sooner too. The
archive changes where the JVM reads class data from, nothing the query does.

`class_archive()` returns the archive's path, training it first when there is none: a local
session (`child_spark.JAVA_OPTIONS`, the children's JVM options) runs a small batch query and
exits, writing it. It lives in the virtual environment (`<sys.prefix>/jvm-class-archives/`, named
by a key of the JDK, the pyspark jars and the options: another install trains its own), so a
machine trains once. Training takes a lock; a process that finds the lock held, or a training
that fails, gets None and starts its children without an archive (slower, the same test). A JVM
that finds the archive does not match its class path ignores it with a warning in the log.

Run as a script (by `class_archive()`), `python jvm_class_archive.py <archive path>` is the
training run.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from child_spark import JAVA_OPTIONS

logger = logging.getLogger(__name__)

TRAINING_TIMEOUT_S = 300.0
_found: dict[str, Path] = {}


def _key() -> str:
    """Changes with the JDK, the jars of the installed pyspark and the JVM options."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    java = shutil.which("java") or "java"
    digest = hashlib.sha256(f"{JAVA_OPTIONS}\n{os.environ.get('JAVA_HOME', '')}\n".encode())
    for path in [Path(java).resolve(), *sorted(jars.glob("*.jar"))]:
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def class_archive(*, train: bool = True) -> Path | None:
    """The archive for this environment, trained on first use (unless not `train`); None when it
    cannot be had now."""
    key = _key()
    if key not in _found:  # None is not kept: the archive another process trains comes later
        archive = _train_or_find(Path(sys.prefix) / "jvm-class-archives", key, train)
        if archive is None:
            return None
        _found[key] = archive
    return _found[key]


def _train_or_find(directory: Path, key: str, train: bool) -> Path | None:
    archive = directory / f"{key}.jsa"
    if archive.exists() or not train:
        return archive if archive.exists() else None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with (directory / f"{key}.lock").open("w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process trains it: no archive for this one
                return None
            if not archive.exists():
                _train(archive)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("no JVM class archive for the child Spark drivers: %s", exc)
        return None
    return archive


def _train(archive: Path) -> None:
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)  # of a training cut short (the JVM writes it read-only)
    log = archive.with_suffix(".log")
    with log.open("wb") as out:
        subprocess.run(
            [sys.executable, __file__, str(partial)],
            stdout=out, stderr=subprocess.STDOUT, check=True, timeout=TRAINING_TIMEOUT_S,
            cwd=archive.parent,
        )
    if not partial.exists():
        raise OSError(f"the training run wrote no archive (its log: {log})")
    partial.replace(archive)


def main(argv: list[str]) -> int:
    """The training run: a session and a query with a shuffle, then the JVM's exit (which writes
    the archive) awaited."""
    from pyspark import SparkContext

    from spark_jetstream.local import local_spark_session

    (target,) = argv
    options = f"{JAVA_OPTIONS} -XX:ArchiveClassesAtExit={target}"
    spark = local_spark_session("jvm-class-archive", cores=2, conf={"spark.driver.extraJavaOptions": options})
    spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    jvm = SparkContext._gateway.proc  # type: ignore[union-attr]  # the JVM that pyspark launched
    spark.stop()
    jvm.stdin.close()  # the gateway exits on the end of its input, writing the archive
    return int(jvm.wait(TRAINING_TIMEOUT_S))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
