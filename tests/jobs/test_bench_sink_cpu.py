"""The sink CPU helper (jobs/bench/sink_cpu.py): one task's publish, every row stored, a CPU figure."""

from __future__ import annotations

import re

import pytest

from jetstream_testing.process import ServerProcess
from jobs.bench import sink_cpu


def test_rows_are_the_benchmarks_and_batches_sparks() -> None:
    batches = sink_cpu.arrow_batches(25_001, 128)
    assert [b.num_rows for b in batches] == [10_000, 10_000, 5_001]
    first = batches[0].column("data").to_pylist()
    assert first[0] == b"x" * 127 + b"0" and len(set(map(len, first))) == 1


def test_measure_publishes_every_row_and_reports_cpu_per_row(server: ServerProcess) -> None:
    line = sink_cpu.measure(server.url, 3000, 128, server)
    assert re.fullmatch(r"3000 rows in [\d.]+s \([\d,]+/s\): client [\d.]+ us/row, server [\d.]+ us/row", line)
    line = sink_cpu.measure(server.url, 500, 16, None)  # a fresh stream again: all 500 stored
    assert "client" in line and "server" not in line


def test_main_rejects_a_url_with_a_server_kind(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        sink_cpu.main(["--url", "nats://127.0.0.1:4222", "--server", "bundled"])


def test_main_measures_each_server_it_starts(capsys: pytest.CaptureFixture[str]) -> None:
    """The page's command (`--server both`), with fewer rows: a line a server, every row stored."""
    sink_cpu.main(["--server", "both", "--rows", "2000"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["bundled", "nats-server"]
    assert all(" 2000 rows in " in line and "server" in line.split(":", 1)[1] for line in lines)
