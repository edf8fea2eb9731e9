"""Spark's Python processes import the installed, compiled pyspark (`local_spark_session`).

Imported by Python at the start of every Python process of a session that
`spark_jetstream.local.local_spark_session` started: this folder is on their PYTHONPATH.

Spark puts `pyspark/python/lib/pyspark.zip` and py4j's source zip first on the path of the
Python processes it starts (the planner that looks up and plans a data source, the worker
daemons). Python keeps no bytecode for modules it imports from a zip, so each of those
processes compiles pyspark anew: about 0.6 s of CPU per process. This drops the two entries
when the installed packages they were shipped with are on the path: the zips under
`<site-packages>/pyspark/python/lib/` of the pyspark that pip installed, beside it, the same
code that pip compiled. A zip of any other Spark (a `SPARK_HOME` elsewhere) stays.

A `sitecustomize` that this one hides (a distribution's own, later on the path) runs after it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _is_bundled_zip(entry: str) -> bool:
    """`entry` is a zip in `<dir>/pyspark/python/lib/` and `<dir>` is on the path too."""
    if not entry.endswith(".zip"):
        return False
    lib = os.path.dirname(os.path.abspath(entry))
    python = os.path.dirname(lib)
    package = os.path.dirname(python)
    if (os.path.basename(lib), os.path.basename(python), os.path.basename(package)) != ("lib", "python", "pyspark"):
        return False
    site = os.path.dirname(package)
    return any(os.path.abspath(path or ".") == site for path in sys.path)


def _run_hidden_sitecustomize() -> None:
    """Run the `sitecustomize` that the path holds after this folder, if there is one."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [path for path in sys.path if os.path.abspath(path or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


sys.path[:] = [entry for entry in sys.path if not _is_bundled_zip(entry)]
_run_hidden_sitecustomize()
