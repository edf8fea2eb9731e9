"""The benchmark job's --quick mode runs end to end (so the job cannot rot) and reports every workload."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.bench.results import Comparison, render_comparisons
from jobs.benchmark import main

pytestmark = pytest.mark.spark


def test_quick_benchmark_reports_every_workload_with_ratios(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    report = tmp_path / "bench.md"
    assert main(["--quick", "--markdown", str(report)]) == 0
    out = capsys.readouterr().out
    text = report.read_text()
    assert text.strip() in out
    assert text.startswith("Quick benchmark, ")
    for workload in (
        "sync publish",
        "publish_async (",
        "pull fetch + ack",
        "ordered consumer",
        "streaming read, AvailableNow -> noop",
        "batch read -> noop",
        "sink, batch write",
        "publish_async, sync_always off",
        "publish_async, sync_always on",
        "restart until the stream answers",
        "server RSS after restart",
    ):
        assert workload in text, workload
    rows = [line for line in text.splitlines() if line.startswith("| nats-py")]
    assert len(rows) == 4
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[4].replace(",", "")) > 0 and float(cells[6].replace(",", "")) > 0
        assert cells[7].endswith("x")
    assert "every target met" in text or "targets missed:" in text


def test_comparison_table_marks_missed_targets() -> None:
    rows = [
        Comparison("g", "fast", "msgs/s", "a", 90.0, "b", 100.0, 0.8),
        Comparison("g", "slow", "msgs/s", "a", 50.0, "b", 100.0, 0.8),
        Comparison("g", "untargeted", "s", "a", 2.0, "b", 1.0),
    ]
    table = render_comparisons(rows)
    lines = table.splitlines()
    assert "0.90x" in lines[2] and ">= 0.8 ok" in lines[2]
    assert "0.50x" in lines[3] and "MISSED" in lines[3]
    assert "2.00x" in lines[4] and "MISSED" not in lines[4] and "ok" not in lines[4].split("|")[-2]
