"""`spark_jetstream/worker_site/sitecustomize.py`: which zips it drops from a Python process's
path, and that a `sitecustomize` it hides still runs. Real child interpreters, no Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from spark_jetstream.local import WORKER_SITE, use_worker_site


def _child_path(pythonpath: list[Path | str], code: str = "import json, sys; print(json.dumps(sys.path))") -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    env["PYTHONPATH"] = os.pathsep.join(map(str, pythonpath))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def _fake_pyspark(site: Path) -> tuple[Path, Path]:
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    return lib / "pyspark.zip", lib / "py4j-0.10.9.9-src.zip"


def test_the_zips_of_a_pyspark_on_the_path_are_dropped(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    pyspark_zip, py4j_zip = _fake_pyspark(site)
    path = _child_path([pyspark_zip, py4j_zip, WORKER_SITE, site])
    assert str(pyspark_zip) not in path and str(py4j_zip) not in path
    assert str(site) in path and WORKER_SITE in path


def test_zips_of_another_spark_or_of_a_pyspark_not_on_the_path_stay(tmp_path: Path) -> None:
    spark_home_zip = tmp_path / "spark-4.1.0" / "python" / "lib" / "pyspark.zip"  # a SPARK_HOME elsewhere
    elsewhere_zip, _ = _fake_pyspark(tmp_path / "not-on-the-path")
    user_zip = tmp_path / "deps.zip"  # --py-files
    path = _child_path([spark_home_zip, elsewhere_zip, user_zip, WORKER_SITE])
    assert {str(spark_home_zip), str(elsewhere_zip), str(user_zip)} <= set(path)


def test_a_sitecustomize_it_hides_still_runs(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.HIDDEN_SITE_RAN = True\n")
    path = _child_path([WORKER_SITE, other], "import builtins, json, sys; print(json.dumps([getattr(builtins, 'HIDDEN_SITE_RAN', False)]))")
    assert path == [True]


def test_use_worker_site_puts_it_first_once() -> None:
    env = {"PYTHONPATH": os.pathsep.join(["/a", "/b"])}
    use_worker_site(env)
    use_worker_site(env)
    assert env["PYTHONPATH"].split(os.pathsep) == [WORKER_SITE, "/a", "/b"]
    empty: dict[str, str] = {}
    use_worker_site(empty)
    assert empty == {"PYTHONPATH": WORKER_SITE}
