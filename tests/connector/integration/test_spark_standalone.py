"""The connector on a real Spark standalone cluster: a master and two workers from the
pip package, executors in their own JVMs, the connector shipped with the job.

How the connector reaches executors (docs/deployment.md): as a zip
of its wheel in `spark-submit --py-files`. Here every Python of the job (the
driver's and the executors') is a venv that has pyarrow and numpy and nothing else, so
`spark_jetstream` can only come from the shipped zip: the control below shows
that venv cannot import it on its own. The job is the checkpointed
jetstream -> jetstream pipeline of the crash test (tests/support/crash_pipeline.py),
run by spark-submit in client mode; the output holds each input exactly once
and both workers ran an executor of it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from child_spark import WORKER_SITE
from sink_helpers import create_stream, publish_acked, read_stream, stream_info

from jetstream_testing.process import ServerProcess, start_server
from jetstream_testing.spark_cluster import SparkStandalone, spark_home, worker_env

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

N = 1000
REPO = Path(__file__).resolve().parents[3]
PIPELINE = REPO / "tests" / "support" / "crash_pipeline.py"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory, bare_python: Path) -> Iterator[SparkStandalone]:
    # the workers' machines: `python3` on their PATH is the bare venv (no connector)
    path = {"PATH": f"{bare_python.parent}:/usr/bin:/bin"}
    with SparkStandalone(tmp_path_factory.mktemp("spark-standalone"), workers=2, env=path) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def connector_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The connector's wheel, built as the guide says, as a zip for --py-files."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        timeout=300,
        cwd=out,
    )
    (wheel,) = out.glob("spark_jetstream-*.whl")
    return Path(shutil.copy(wheel, out / "spark_jetstream.zip"))


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return worker_env(tmp_path_factory.mktemp("worker-env") / "venv")


@pytest.fixture(scope="module")
def nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server("nats-server", tmp_path_factory.mktemp("store"))
    try:
        yield proc
    finally:
        proc.stop()


def test_the_bare_worker_python_has_pyarrow_but_not_the_connector(bare_python: Path, tmp_path: Path) -> None:
    # not from the repository root: `python -c` puts the working directory on sys.path
    ok = subprocess.run(
        [str(bare_python), "-c", "import pyarrow, numpy; numpy.zeros(3).sum()"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    missing = subprocess.run(
        [str(bare_python), "-c", "import spark_jetstream"], capture_output=True, text=True, cwd=tmp_path
    )
    assert "No module named 'spark_jetstream'" in missing.stderr


@pytest.mark.timeout(600)
def test_pipeline_on_two_workers_with_the_connector_shipped_as_py_files(
    standalone: SparkStandalone, connector_zip: Path, bare_python: Path, nats: ServerProcess, tmp_path: Path
) -> None:
    create_stream(nats.url, "IN", ["in.>"])
    create_stream(nats.url, "OUT", ["out.>"], duplicate_window=600 * 10**9)
    publish_acked(nats.url, [(f"in.{i % 7}", f"msg-{i}".encode()) for i in range(N)])
    conf = {
        # the driver's Python has the connector (the job imports it to register the source);
        # executors run `python3` from their machine's PATH: the bare venv, no connector.
        # (not spark.executorEnv.PATH: it goes into the driver's Python workers' env too)
        "spark.pyspark.driver.python": sys.executable,
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.driver.host": "127.0.0.1",
    }
    argv = [str(spark_home() / "bin" / "spark-submit"), "--master", standalone.master_url]
    argv += ["--py-files", str(connector_zip)]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(PIPELINE), "narrow", nats.url, str(tmp_path / "checkpoint"), "IN", "out.copy", "submit=1", "max=500"]
    log = tmp_path / "submit.log"
    with log.open("wb") as sink:
        # cwd: not the repository root, whose source tree `python -m` workers would import
        done = subprocess.run(
            argv, stdout=sink, stderr=subprocess.STDOUT, timeout=420, env=_submit_env(), cwd=tmp_path
        )
    assert done.returncode == 0, log.read_text()[-5000:]

    msgs = read_stream(nats.url, "OUT")
    ids = [m.msg_id for m in msgs]
    assert len(ids) == len(set(ids)) == N
    assert sorted(ids) == sorted(f"crash:IN:{seq}:0" for seq in range(1, N + 1))  # type: ignore[type-var]
    assert sorted(m.data for m in msgs) == sorted(f"done:MSG-{i}".encode() for i in range(N))
    assert int(stream_info(nats.url, "OUT")["state"]["messages"]) == N
    # each worker launched an executor JVM for the application, which fetched the shipped zip
    for i in range(standalone.workers):
        executors = list((standalone.base_dir / f"worker{i}").glob("app-*/*/stderr"))
        assert executors, f"worker{i} ran no executor"
        assert list((standalone.base_dir / f"worker{i}").glob("app-*/*/spark_jetstream.zip"))


def _submit_env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["SPARK_HOME"] = str(spark_home())
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    # the driver's `python3` (Python workers of the driver) is this venv's
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(key, None)
    # only worker_site: the driver's Python processes import the installed pyspark, compiled, not
    # pyspark.zip (child_spark.py); the executors' come from the workers' env, untouched
    env["PYTHONPATH"] = str(WORKER_SITE)
    return env


@pytest.mark.timeout(600)
def test_main_job_on_the_standalone_cluster_against_a_nats_cluster(
    standalone: SparkStandalone, connector_zip: Path, tmp_path: Path
) -> None:
    """docs/deployment.md's cluster command: `python -m jobs.orders_pipeline --master spark://...
    --servers a,b,c --replicas 3 --py-files spark_jetstream.zip`; its own checks pass."""
    from jetstream_testing.cluster import NatsCluster

    with NatsCluster(tmp_path / "nats", 3) as nats_cluster:
        argv = [sys.executable, "-m", "jobs.orders_pipeline", "--master", standalone.master_url]
        argv += ["--servers", nats_cluster.servers, "--replicas", "3", "--py-files", str(connector_zip)]
        argv += ["--orders", "300", "--batch-size", "500", "--data-dir", str(tmp_path / "data")]
        for setting in ("spark.driver.host=127.0.0.1", "spark.executor.memory=512m", "spark.cores.max=2"):
            argv += ["--conf", setting]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=480, env=_submit_env(), cwd=REPO  # jobs/ runs from the repository
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
        assert "all checks passed" in done.stdout
        assert stream_info(nats_cluster.urls[0], "ORDERS")["config"]["num_replicas"] == 3
