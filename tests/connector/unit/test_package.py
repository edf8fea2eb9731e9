"""The package `__init__` (spark_jetstream/__init__.py): lazy, public names kept.

`import spark_jetstream` must not import pyspark or pyarrow (checked in a fresh
interpreter, where nothing else imported them first); neither may the options,
the client or the PySpark-internals module. The public names still work.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("pyspark", "pyarrow")


def modules_after(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(done.stdout.split())


@pytest.mark.parametrize(
    "code",
    [
        "import spark_jetstream",
        "import spark_jetstream; spark_jetstream.register; dir(spark_jetstream)",
        "import spark_jetstream.options, spark_jetstream.options.table",
        "import spark_jetstream.client, spark_jetstream.client.connection",
        "import spark_jetstream.spark_internals",
        "import spark_jetstream.read, spark_jetstream.write",
    ],
)
def test_light_imports_pull_in_neither_pyspark_nor_pyarrow(code: str) -> None:
    loaded = modules_after(code)
    assert not {m.split(".")[0] for m in loaded} & set(HEAVY), code


def test_the_data_source_class_is_imported_on_first_use() -> None:
    loaded = modules_after("import spark_jetstream; spark_jetstream.JetStreamDataSource")
    assert {"pyspark", "spark_jetstream.datasource"} <= loaded


def test_public_names() -> None:
    import spark_jetstream
    from spark_jetstream.datasource import JetStreamDataSource
    from spark_jetstream.local import local_spark_session

    assert spark_jetstream.JetStreamDataSource is JetStreamDataSource
    assert JetStreamDataSource.name() == "jetstream"
    assert callable(spark_jetstream.register) and callable(local_spark_session)
    assert {"JetStreamDataSource", "register"} <= set(dir(spark_jetstream))
    assert spark_jetstream.__all__ == ["JetStreamDataSource", "register"]
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        spark_jetstream.nothing  # noqa: B018
