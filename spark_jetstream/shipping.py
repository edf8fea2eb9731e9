"""Executors that get the connector by `--py-files` (or `addPyFile`), whatever
registered the data source.

Spark adds a `--py-files` archive to its Python workers' `sys.path` through
the Python function that carries the work: a data source registered from the
session (`register(spark)`) carries the session's shipped files, one that
Spark found by itself (`pyspark_jetstream`, installed on the driver) carries
none, so an executor without the connector installed fails to unpickle the
reader or writer (`No module named 'spark_jetstream'`) although the archive
sits in its files directory.

`Shipped` (a base of every object Spark sends to executors: readers, writers,
input partitions) pickles as a call to `load_shipped`, which this module
registers with pyspark's cloudpickle to be pickled *by value*: the executor
runs it before it needs the connector. It imports the object's module and,
when that fails, puts on `sys.path` the archives in Spark's files directory
that hold the `spark_jetstream` package, then imports again. Plain `pickle`
(and `copy`) pickle the same call by reference, where the connector is
installed. `load_shipped` uses only the standard library and pyspark.
"""

from __future__ import annotations

import sys
from typing import Any

_PACKAGE_FILE = "spark_jetstream/__init__.py"
_ARCHIVES = (".zip", ".egg", ".whl")


def load_shipped(module: str, qualname: str) -> Any:
    """An empty instance of `module.qualname` (pickle then restores its state),
    importing the connector from a shipped archive if it is not installed."""
    import importlib
    import os
    import zipfile

    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as missing:
        try:
            from pyspark import SparkFiles

            root = SparkFiles.getRootDirectory()
            names = sorted(os.listdir(root))
        except Exception:
            raise missing from None
        added = False
        for name in names:
            path = os.path.join(root, name)
            if not name.endswith(_ARCHIVES) or path in sys.path:
                continue
            try:
                with zipfile.ZipFile(path) as archive:
                    holds = _PACKAGE_FILE in archive.namelist()
            except (OSError, zipfile.BadZipFile):
                continue
            if holds:
                sys.path.insert(0, path)
                added = True
        if not added:
            raise ModuleNotFoundError(
                f"{missing}: the jetstream connector is neither installed in this Python "
                f"({sys.executable}) nor shipped with --py-files"
            ) from None
        importlib.invalidate_caches()
        found = importlib.import_module(module)
    cls: Any = found
    for part in qualname.split("."):
        cls = getattr(cls, part)
    return cls.__new__(cls)


class Shipped:
    """Pickles as `load_shipped(module, qualname)` plus the object's state."""

    __slots__ = ()

    def __reduce_ex__(self, protocol: Any) -> Any:
        cls = type(self)
        if not _importable(cls):  # a class made at run time: pickled the usual way (by value)
            return super().__reduce_ex__(protocol)
        state = self.__getstate__()  # type: ignore[attr-defined]  # object's (3.11+), or the class's own
        return load_shipped, (cls.__module__, cls.__qualname__), state


def _importable(cls: type) -> bool:
    """Whether `cls` is what its module and qualified name lead to."""
    found: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


def _pickle_loader_by_value() -> None:
    try:
        from pyspark import cloudpickle
    except ImportError:  # pyspark absent: nothing pickles for Spark here
        return
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


_pickle_loader_by_value()
