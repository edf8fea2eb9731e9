"""Files named by options (TLS certificates and keys, .creds and NKey seed files): where they are.

The driver checks the options and the executors open the connections, so a
file must be readable where each of them runs. Two ways to get it there:
- the same path on every machine (a shared or provisioned directory);
- Spark's file distribution (`spark.files`, `spark-submit --files`,
  `SparkContext.addFile`): Spark copies the file into its files directory of
  every executor (and of the driver's Python workers), under its base name.

`find_file(path)` returns the path as given when it exists here, else the
copy Spark distributed (`SparkFiles.getRootDirectory()/<basename>`), else
None. The option keeps the name as the user wrote it; each process resolves
it again where it runs (the files directory differs between processes).

Imports nothing of pyspark: Spark's `SparkFiles` is only looked up when this
process has already imported it (every Spark worker and driver has), through
its public `getRootDirectory()`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SPARK_FILES_MODULE = "pyspark.core.files"  # where pyspark 4 defines SparkFiles
SPARK_CONTEXT_MODULE = "pyspark.core.context"


def spark_files_root() -> str | None:
    """Spark's files directory in this process, or None when Spark is not running here."""
    files = sys.modules.get(SPARK_FILES_MODULE)
    spark_files = getattr(files, "SparkFiles", None)
    if spark_files is None:
        return None
    # On a worker the directory is set when the worker starts; on the driver
    # `getRootDirectory` asks the JVM, which needs an active SparkContext.
    if not getattr(spark_files, "_is_running_on_worker", False):
        context = getattr(sys.modules.get(SPARK_CONTEXT_MODULE), "SparkContext", None)
        if context is None or getattr(context, "_active_spark_context", None) is None:
            return None
    root = spark_files.getRootDirectory()
    return str(root) if root else None


def find_file(path: str) -> str | None:
    """`path` when it is a file here, else Spark's distributed copy of it, else None."""
    if Path(path).is_file():
        return path
    root = spark_files_root()
    if root is not None:
        candidate = os.path.join(root, os.path.basename(path))
        if Path(candidate).is_file():
            return candidate
    return None


def not_found_text(option: str, path: str) -> str:
    """The error text for a file option whose file is neither here nor in Spark's files."""
    return (
        f"option {option}: file not found: {path} (neither at that path nor among the files "
        "Spark distributes: give a path that exists on the driver and every executor, or "
        "distribute the file with spark.files / SparkContext.addFile)"
    )
