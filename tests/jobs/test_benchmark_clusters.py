"""The benchmark's `clusters` family (left out of --quick): a Spark standalone cluster with 1 and
2 workers against one nats-server and a 3-node R3 cluster, small; and a cluster that cannot give
the job its executors ends the family with a message naming the cause, not a hang."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from child_spark import worker_site_path

from jetstream_testing.spark_cluster import SparkStandalone
from jobs.bench import clusters, natspy
from jobs.bench.cluster_job import WORKLOADS

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


@pytest.mark.timeout(900)
def test_clusters_family_reports_workers_and_replication_ratios(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the Python processes of the jobs' drivers and executors import the installed pyspark,
    # compiled, instead of compiling pyspark.zip each (child_spark.py): the same jobs, started sooner
    monkeypatch.setenv("PYTHONPATH", worker_site_path())
    said: list[str] = []
    rows = clusters.run(tmp_path, 2_000, 128, said.append)
    # 2 workers beside 1 on each target, then the R3 cluster beside one server at 1 and 2 workers
    assert len(rows) == 4 * len(WORKLOADS)
    pairs = [(r.subject_label, r.baseline_label) for r in rows]
    assert pairs == [("2 workers", "1 worker")] * 6 + [("3-node R3", "nats-server")] * 6
    for r in rows:
        assert r.group == "clusters" and r.unit == "rows/s"
        assert r.subject > 0 and r.baseline > 0, r
    assert {w for r in rows for w in WORKLOADS if r.workload.startswith(w)} == set(WORKLOADS)
    assert any("2 worker(s), 3-node R3: sink, batch write" in line for line in said)


@pytest.mark.timeout(600)
def test_a_cluster_without_executors_fails_the_family_with_the_cause(tmp_path: Path) -> None:
    targets = [("nats-server", "nats://127.0.0.1:1", 1)]  # never reached: no executor ever registers
    with SparkStandalone(tmp_path / "spark", workers=0) as no_workers:
        started = time.monotonic()
        with pytest.raises(natspy.BenchError) as exc:
            clusters.run_job(no_workers, 1, targets, 100, 128, job_timeout=300, executor_timeout=5)
        took = time.monotonic() - started
    text = str(exc.value)
    assert "the Spark job on 1 standalone worker(s) exited with 1" in text
    assert f"the standalone master {no_workers.master_url} gave this application 0 of 1 executors within 5s" in text
    assert took < 300  # ended by the executor wait, not by the job timeout
