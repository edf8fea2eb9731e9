"""Imported at the start of every Python process of a crash test's child Spark (its driver,
the planner and worker daemons), put on their path by `child_spark.child_env()`.

Spark puts `pyspark/python/lib/pyspark.zip` and py4j's source zip first on its Python
processes' path. Python cannot keep bytecode for modules imported from a zip, so every planner
and worker daemon compiles pyspark anew: 0.6 s of CPU per process, seven processes per start of
the crash pipeline. This drops those two entries when the installed packages they ship within
(the same pyspark, the same py4j, compiled by pip) are on the path: the same code, loaded from
its bytecode. A zip of any other pyspark stays.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _bundled_zip(entry: str) -> bool:
    """`entry` is a zip under `<dir>/pyspark/python/lib/`, `<dir>` (the installed pyspark's
    site-packages) being on the path as well."""
    path = Path(entry)
    if path.suffix != ".zip" or path.parent.parts[-3:] != ("pyspark", "python", "lib"):
        return False
    return str(path.parents[3]) in sys.path


sys.path[:] = [entry for entry in sys.path if not _bundled_zip(entry)]
