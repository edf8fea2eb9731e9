"""The jobs are not installed: they run from the repository root
(`python -m jobs.orders_pipeline`). These tests make the `jobs` package, and
only it, importable: a directory holding nothing but a link to the repository's
`jobs/` goes on sys.path and into PYTHONPATH (for the job's child processes and
Spark's Python workers, which are started after collection). The repository
root itself stays off the path, where its `spark_jetstream/` folder would
shadow the installed connector."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

JOBS = Path(__file__).resolve().parents[2] / "jobs"


def _expose_jobs_package() -> None:
    if any((Path(p) / "jobs" / "__init__.py").exists() for p in sys.path if p):
        return
    holder = tempfile.mkdtemp(prefix="jobs-path-")
    atexit.register(shutil.rmtree, holder, ignore_errors=True)
    os.symlink(JOBS, Path(holder) / "jobs")
    sys.path.insert(0, holder)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (holder, os.environ.get("PYTHONPATH", "")) if p
    )


_expose_jobs_package()
