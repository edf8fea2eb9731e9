"""The quick start-up of the crash tests' child Spark drivers (tests/support/child_spark.py): their
Python processes import the installed pyspark instead of the zip Spark puts first on their path,
and a zip of another pyspark stays; the driver's JVM options name the class archive when given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from child_spark import ARCHIVE_ENV, JAVA_OPTIONS, WORKER_SITE, child_conf, child_env

INSTALLED = Path(pyspark.__file__).parent
SHOW_PATH = "import json, sys, pyspark, py4j; print(json.dumps([pyspark.__file__, py4j.__file__, sys.path]))"


def test_spark_python_processes_import_the_installed_pyspark_not_its_zip() -> None:
    bundled = sorted((INSTALLED / "python" / "lib").glob("*.zip"))
    assert {p.name.split("-")[0] for p in bundled} == {"pyspark.zip", "py4j"}
    foreign = "/elsewhere/pyspark/python/lib/pyspark.zip"  # another pyspark's: not on this path
    env = child_env(None)
    # as Spark builds it: its zips first, then the driver's PYTHONPATH (worker_site first)
    env["PYTHONPATH"] = ":".join([*map(str, bundled), foreign, env["PYTHONPATH"]])
    done = subprocess.run([sys.executable, "-c", SHOW_PATH], env=env, capture_output=True, text=True, check=True)
    pyspark_file, py4j_file, path = json.loads(done.stdout)
    assert Path(pyspark_file).parent == INSTALLED and (INSTALLED / "__pycache__").is_dir()
    assert ".zip" not in py4j_file
    assert not set(map(str, bundled)) & set(path)
    assert foreign in path and str(WORKER_SITE) in path


def test_the_child_driver_maps_the_archive_it_is_given(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ARCHIVE_ENV, raising=False)
    assert child_conf()["spark.driver.extraJavaOptions"] == JAVA_OPTIONS
    assert ARCHIVE_ENV not in child_env(None)
    archive = tmp_path / "classes.jsa"
    monkeypatch.setenv(ARCHIVE_ENV, child_env(archive)[ARCHIVE_ENV])
    assert child_conf()["spark.driver.extraJavaOptions"] == f"{JAVA_OPTIONS} -XX:SharedArchiveFile={archive}"
