"""The benchmark job's --quick mode runs end to end (so the job cannot rot) and reports every workload;
the server CPU reading and the comparison table's targets on their own."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jetstream_testing.cluster import free_port
from jetstream_testing.process import ServerProcess
from jobs.bench import natspy
from jobs.bench.results import Comparison, render_comparisons
from jobs.bench.servers import cpu_seconds
from jobs.benchmark import main


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip("|").split("|")]


def _number(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("x"))


@pytest.mark.spark
@pytest.mark.timeout(600)  # a loaded machine; on a quiet one about a minute
def test_quick_benchmark_reports_every_workload_with_ratios(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    report = tmp_path / "bench.md"
    plot = tmp_path / "bench.png"
    assert main(["--quick", "--markdown", str(report), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    text = report.read_text()
    assert text.strip() in out
    assert text.startswith("Quick benchmark, ")
    # the time of each family, in the header
    for family in ("natspy and cpu", "connector", "filestore", "size and partitions"):
        assert f"{family} " in text.splitlines()[0], family
    assert "clusters" not in text  # only in the full run, or when named
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
        "fill, pipelined publish (5,000 x 128 B)",
        "batch read -> noop, 2 partitions (20,000 x 128 B)",
        "server RSS after reading (20,000 x 128 B)",
        "batch read (20,000 beside 5,000 msgs, bundled)",
        "restart (20,000 beside 5,000 msgs, nats-server)",
    ):
        assert workload in text, workload
    rows = [line for line in text.splitlines() if line.startswith("| nats-py")]
    assert len(rows) == 4
    for row in rows:
        cells = _cells(row)
        assert _number(cells[4]) > 0 and _number(cells[6]) > 0
        assert cells[7].endswith("x")
    # server CPU per message: the same four workloads, lower is better (issue 22's targets)
    cpu = [_cells(line) for line in text.splitlines() if line.startswith("| server CPU")]
    assert [c[1].split(" (")[0] for c in cpu] == ["sync publish", "publish_async", "pull fetch + ack", "ordered consumer"]
    assert [(c[2], c[8].rsplit(" ", 1)[0]) for c in cpu] == [
        ("us/msg", "<= 1"), ("us/msg", "<= 1.6"), ("us/msg", "<= 1.6"), ("us/msg", "<= 2")
    ]
    # each connector workload's CPU per row by process, the ceilings' too
    per_row = [_cells(line) for line in text.splitlines() if line.startswith("| CPU per row")]
    assert {(c[1].split(",")[0], c[2]) for c in per_row} == {
        (w, kind) for w in ("streaming read", "batch read") for kind in ("ceiling", "bundled")
    } | {("sink", "bundled")}  # --quick runs the connector against the bundled server only
    assert all(c[4] == "us/row" and _number(c[3]) >= 0 for c in per_row)
    # 10 ms clock ticks: one workload may read 0, the four together cannot
    assert sum(_number(c[4]) for c in cpu) > 0 and sum(_number(c[6]) for c in cpu) > 0
    # partitions: 2 and 4 beside 1, on both servers
    parts = [_cells(line) for line in text.splitlines() if line.startswith("| partitions")]
    assert [(c[1].rsplit(", ", 1)[1], c[3]) for c in parts] == [
        ("bundled)", "2 partitions"), ("bundled)", "4 partitions"),
        ("nats-server)", "2 partitions"), ("nats-server)", "4 partitions"),
    ]
    assert all(_number(c[4]) > 0 and _number(c[6]) > 0 for c in parts)
    assert "every target met" in text or "targets missed:" in text
    # the plot: a PNG next to the report, linked from it
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and plot.stat().st_size > 20_000
    assert text.rstrip().endswith("(bench.png)")


def test_plot_needs_the_size_family(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--only", "natspy", "--plot", str(tmp_path / "p.png")])
    assert exc.value.code == 2
    assert "--plot draws the 'size' family's figures" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()


def test_cpu_seconds_reads_the_cpu_time_of_the_server_process() -> None:
    burn = (
        "import sys, time\n"
        "while time.process_time() < 0.6: pass\n"
        "print('done', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = ServerProcess([sys.executable])
    assert cpu_seconds(proc) == 0.0  # not started
    proc.proc = subprocess.Popen([sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.proc.stdout is not None and proc.proc.stdout.readline() == b"done\n"
        used = cpu_seconds(proc)
        assert 0.55 <= used < 5.0, used
        assert cpu_seconds(proc) - used < 0.05  # idle now: the reading stands still
    finally:
        proc.proc.kill()
        proc.proc.wait(10)


def test_comparison_table_marks_missed_targets() -> None:
    rows = [
        Comparison("g", "fast", "msgs/s", "a", 90.0, "b", 100.0, 0.8),
        Comparison("g", "slow", "msgs/s", "a", 50.0, "b", 100.0, 0.8),
        Comparison("g", "untargeted", "s", "a", 2.0, "b", 1.0),
        Comparison("g", "lean", "us/msg", "a", 3.0, "b", 4.0, 1.0, lower_is_better=True),
        Comparison("g", "costly", "us/msg", "a", 6.0, "b", 4.0, 1.0, lower_is_better=True),
    ]
    table = render_comparisons(rows)
    lines = table.splitlines()
    assert "0.90x" in lines[2] and ">= 0.8 ok" in lines[2]
    assert "0.50x" in lines[3] and "MISSED" in lines[3]
    assert "2.00x" in lines[4] and "MISSED" not in lines[4] and "ok" not in lines[4].split("|")[-2]
    assert "0.75x" in lines[5] and "<= 1 ok" in lines[5]
    assert "1.50x" in lines[6] and "<= 1 MISSED" in lines[6]
    assert [r.met for r in rows] == [True, False, None, True, False]


def test_a_workload_against_a_server_that_is_not_listening_fails_in_bounded_time() -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(natspy.BenchError, match=f"cannot connect to {url}"):
        asyncio.run(natspy.sync_publish(url, 10, 16))
    assert time.monotonic() - started < natspy.CONNECT_TIMEOUT_S + 5


@pytest.mark.timeout(300)
def test_natspy_family_shows_the_speedups_beside_asyncio(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """With uvloop installed (the server's `speedups` extra), `--only natspy --only cpu` runs the
    bundled server on uvloop and once more with JETSTREAM_SPEEDUPS=off, one `speedups` row per
    workload and figure: the gain in the same run."""
    pytest.importorskip("uvloop")
    monkeypatch.setenv("JETSTREAM_SPEEDUPS", "auto")  # the suite's default is off (tests/conftest.py)
    assert main(["--quick", "--only", "natspy", "--only", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "nats-py on bundled, speedups off: " in out
    assert ", bundled server on uvloop " in out
    rows = [_cells(line) for line in out.splitlines() if line.startswith("| speedups")]
    assert [(r[1].split(" (")[0], r[2], r[3], r[5]) for r in rows] == [
        (what, unit, "uvloop", "asyncio")
        for workload in natspy.WORKLOADS
        for what, unit in ((f"nats-py, {workload}", "msgs/s"), (f"server CPU, {workload}", "us/msg"))
    ]
    assert all(_number(r[4]) > 0 and _number(r[6]) > 0 for r in rows if r[2] == "msgs/s")
    assert len([line for line in out.splitlines() if line.startswith("| nats-py")]) == 4


def test_median_timing_takes_the_median_wall_time_and_server_cpu_apart() -> None:
    runs = [natspy.Timing(1000, 2.0, 0.5), natspy.Timing(1000, 1.0, 0.9), natspy.Timing(1000, 4.0, 0.1)]
    median = natspy.median_timing(runs)
    assert (median.count, median.wall_s, median.server_cpu_s) == (1000, 2.0, 0.5)
    assert median.rate == 500.0
    assert natspy.median_timing(runs[:1]) == runs[0]
    with pytest.raises(ValueError, match="different counts"):
        natspy.median_timing([natspy.Timing(1000, 1.0, 0.1), natspy.Timing(999, 1.0, 0.1)])
    with pytest.raises(ValueError, match="no runs"):
        natspy.median_timing([])


@pytest.mark.timeout(300)
def test_natspy_rounds_alternate_the_servers_and_report_the_median(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """With two rounds each server runs twice, nats-server first in the second round, every round
    is printed, and the table's rate lies between the two rounds' rates (their median)."""
    import dataclasses
    import re

    import jobs.benchmark as benchmark

    monkeypatch.setattr(benchmark, "QUICK", dataclasses.replace(benchmark.QUICK, natspy_rounds=2))
    assert main(["--quick", "--only", "natspy"]) == 0
    out = capsys.readouterr().out
    rounds = re.findall(r"nats-py on (bundled|nats-server), round (\d) of 2: (.*)$", out, re.MULTILINE)
    assert [(label, number) for label, number, _ in rounds] == [
        ("bundled", "1"), ("nats-server", "1"), ("nats-server", "2"), ("bundled", "2")
    ]
    for label, column in (("bundled", 4), ("nats-server", 6)):
        for workload in natspy.WORKLOADS:
            rates = [
                _number(re.search(rf"{re.escape(workload)} ([\d,]+)/s", figures).group(1))  # type: ignore[union-attr]
                for name, _, figures in rounds if name == label
            ]
            row = next(_cells(line) for line in out.splitlines()
                       if line.startswith("| nats-py") and f"| {workload} (" in line)
            assert min(rates) * 0.99 <= _number(row[column]) <= max(rates) * 1.01, (label, workload, rates, row)
