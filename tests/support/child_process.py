"""Child processes of the crash tests: a Spark query in its own process group, killed whole.

`start_child` starts `argv` with its output appended to `log`, in its own process
group (SIGKILL of the group takes the JVM and the Python workers with it) and in
the log's directory, not the repository: Spark's Python workers run `python -m`
in the working directory and would import the connector from the source tree
instead of the installed one. `start_spark_child` starts a Spark driver with the
quick start-up of `child_spark.py`.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from child_spark import child_env
from jvm_class_archive import class_archive


def start_child(
    argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            list(argv),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=log.parent,
            env=env,
        )


def start_spark_child(argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """`start_child` for a child that runs a Spark driver: with `child_spark.child_env`, the JVM
    class archive trained on the first call (`jvm_class_archive`)."""
    return start_child(argv, log, child_env(class_archive()))


def kill_group(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group and reap the child."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait(30)


def signal_group(child: subprocess.Popen[bytes], signum: int) -> None:
    """Send `signum` to the child's whole process group (SIGSTOP freezes the JVM and its Python
    workers where they are, SIGCONT lets them go on)."""
    os.killpg(child.pid, signum)


def run_to_success(child: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    """Wait for `child` to exit 0 within `timeout_s` (the log's tail when it does not); its
    group is killed if it is still running when the wait ends either way."""
    try:
        assert child.wait(timeout_s) == 0, log.read_text()[-3000:]
    finally:
        if child.poll() is None:
            kill_group(child)
