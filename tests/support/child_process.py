"""Child processes of the crash tests: a Spark query in its own process group, killed whole.

`start_child` starts `argv` with its output appended to `log`, in its own process
group (SIGKILL of the group takes the JVM and the Python workers with it) and in
the log's directory, not the repository: Spark's Python workers run `python -m`
in the working directory and would import the connector from the source tree
instead of the installed one.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path


def start_child(argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            list(argv),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=log.parent,
        )


def kill_group(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group and reap the child."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait(30)


def run_to_success(child: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    """Wait for `child` to exit 0 within `timeout_s` (the log's tail when it does not); its
    group is killed if it is still running when the wait ends either way."""
    try:
        assert child.wait(timeout_s) == 0, log.read_text()[-3000:]
    finally:
        if child.poll() is None:
            kill_group(child)
