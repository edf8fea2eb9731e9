"""Scaling on clusters: the connector on a Spark standalone cluster with 1 and 2 workers,
against one nats-server and against a 3-node nats-server cluster (R3 stream), all on this machine.

`run(root, rows, size, say)` starts one nats-server, a 3-node cluster
(`jetstream_testing.cluster.NatsCluster`) and a standalone master with two workers of
one core each (`jetstream_testing.spark_cluster.SparkStandalone`), then runs
`jobs.bench.cluster_job` once per worker count as a child process (its own
SparkContext; `spark.cores.max` = workers, so with 1 only one worker gets an
executor). Returns comparisons of the same run: 2 workers beside 1 (per target),
and the R3 cluster beside the single server (per worker count).

A child that fails or outlives `job_timeout` is stopped (its whole process group)
and reported as `natspy.BenchError` with its last output lines and the lines of
the standalone cluster's logs that name a failure, never a hang. On one machine
the workers share its cores: the figures show what executors in separate JVMs and
replication cost the connector, not the throughput of separate hosts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import jobs
from jetstream_testing.cluster import NatsCluster
from jetstream_testing.spark_cluster import SparkStandalone
from jobs.bench import natspy
from jobs.bench.cluster_job import WORKLOADS
from jobs.bench.results import Comparison
from jobs.bench.servers import running

WORKERS = (1, 2)
SINGLE, REPLICATED = "nats-server", "3-node R3"
FAILURE_WORDS = ("Exception", "Error", "failed", "Timed out")


def _failure_lines(base: Path, limit: int = 12) -> list[str]:
    """Lines of the standalone cluster's logs (daemons and executors) that name a failure."""
    found: list[str] = []
    for log in sorted(base.glob("*.log")) + sorted(base.glob("worker*/app-*/*/stderr")):
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            continue
        found += [f"{log.relative_to(base)}: {line}" for line in lines if any(w in line for w in FAILURE_WORDS)]
    return found[-limit:]


def run_job(
    spark_cluster: SparkStandalone,
    workers: int,
    targets: Sequence[tuple[str, str, int]],
    rows: int,
    size: int,
    *,
    job_timeout: float,
    executor_timeout: float = 120.0,
) -> dict[str, dict[str, float]]:
    """Run `jobs.bench.cluster_job` on the standalone cluster; its figures by target."""
    argv = [sys.executable, "-m", "jobs.bench.cluster_job", "--master", spark_cluster.master_url,
            "--workers", str(workers), "--rows", str(rows), "--size", str(size),
            "--executor-timeout", str(executor_timeout)]
    for label, servers, replicas in targets:
        argv += ["--target", f"{label}={servers}={replicas}"]
    env = dict(os.environ)
    # the child imports this `jobs` package (not installed: it runs from where `jobs` is)
    holder = str(Path(jobs.__file__).parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (holder, env.get("PYTHONPATH", "")) if p)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    for key in ("SPARK_HOME", "SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        env.pop(key, None)
    log = spark_cluster.base_dir / f"job-{workers}-workers.log"
    with log.open("wb") as sink:
        child = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                 cwd=spark_cluster.base_dir, start_new_session=True)
        try:
            code: int | None = child.wait(job_timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(30)
    output = log.read_text(errors="replace").splitlines()
    result = next((line[len("RESULT "):] for line in output if line.startswith("RESULT ")), None)
    if code == 0 and result is not None:
        return json.loads(result)  # type: ignore[no-any-return]
    what = f"did not finish within {job_timeout:g}s" if code is None else f"exited with {code}"
    detail = "\n".join(output[-15:] + ["-- standalone cluster logs:"] + _failure_lines(spark_cluster.base_dir))
    raise natspy.BenchError(f"clusters: the Spark job on {workers} standalone worker(s) {what}:\n{detail}")


def run(
    root: Path,
    rows: int,
    size: int,
    say: Callable[[str], None],
    *,
    workers: Sequence[int] = WORKERS,
    job_timeout: float | None = None,
    executor_timeout: float = 120.0,
) -> list[Comparison]:
    # start-up of three JVMs and the workers' Python, plus the work at a pessimistic 5k rows/s
    timeout = job_timeout if job_timeout is not None else 240.0 + 3 * 2 * rows / 5_000
    figures: dict[int, dict[str, dict[str, float]]] = {}
    started = time.monotonic()
    with (
        running("nats-server", root, name="clusters") as single,
        NatsCluster(root / "nats-cluster") as nats_cluster,
        SparkStandalone(root / "spark-standalone", workers=max(workers), cores=1, memory="1g") as spark_cluster,
    ):
        say(f"clusters: nats-server, a 3-node cluster and Spark standalone ({max(workers)} workers) "
            f"up in {time.monotonic() - started:.0f}s")
        targets = [(SINGLE, single.url, 1), (REPLICATED, nats_cluster.servers, 3)]
        for n in workers:
            figures[n] = got = run_job(spark_cluster, n, targets, rows, size, job_timeout=timeout,
                                       executor_timeout=executor_timeout)
            for label, _, _ in targets:
                say(f"{n} worker(s), {label}: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in got[label].items()))
    out: list[Comparison] = []
    what = f"{rows:,} x {size} B"
    if len(workers) > 1:
        few, many = min(workers), max(workers)
        for label in (SINGLE, REPLICATED):
            for workload in WORKLOADS:
                out.append(Comparison("clusters", f"{workload} ({what}, {label})", "rows/s",
                                      f"{many} workers", figures[many][label][workload],
                                      f"{few} worker" + ("s" if few > 1 else ""), figures[few][label][workload]))
    for n in workers:
        for workload in WORKLOADS:
            out.append(Comparison("clusters", f"{workload} ({what}, {n} worker{'s' if n > 1 else ''})", "rows/s",
                                  REPLICATED, figures[n][REPLICATED][workload],
                                  SINGLE, figures[n][SINGLE][workload]))
    return out
