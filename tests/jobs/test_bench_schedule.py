"""`jobs.bench.schedule`: the benchmark's steps, the time left from the expected durations
scaled by the pace so far (an injected clock), the status lines only on a terminal; and the
job itself, run with stderr on a pseudo-terminal, saying which family runs and the time left."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from cli_helpers import run_on_terminal

from jobs.bench.schedule import EXPECTED_FULL_S, EXPECTED_QUICK_S, Schedule, StatusLine
from jobs.benchmark import FULL_FAMILIES, QUICK_FAMILIES

REPO = Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self) -> None:
        self.now = 512.0

    def __call__(self) -> float:
        return self.now


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_steps_of_the_quick_and_full_runs_in_the_job_order() -> None:
    quick = Schedule(QUICK_FAMILIES, quick=True)
    assert quick.steps == ["natspy and cpu", "connector", "filestore", "size and partitions"]
    assert quick.expected_s["size and partitions"] == max(EXPECTED_QUICK_S["size"],
                                                          EXPECTED_QUICK_S["partitions"])
    full = Schedule(FULL_FAMILIES, quick=False)
    assert full.steps[-1] == "clusters"
    assert sum(full.expected_s.values()) == sum(EXPECTED_FULL_S[f] for f in
                                                ("natspy", "connector", "filestore", "size",
                                                 "clusters"))
    only = Schedule({"partitions", "dashboard"}, quick=False)
    assert only.steps == ["partitions", "dashboard"]


def test_time_left_from_the_expected_durations_then_at_the_pace_so_far() -> None:
    clock = FakeClock()
    schedule = Schedule({"natspy", "connector", "filestore"}, quick=False, clock=clock)
    total = EXPECTED_FULL_S["natspy"] + EXPECTED_FULL_S["connector"] + EXPECTED_FULL_S["filestore"]
    assert schedule.start("natspy") == "benchmark: natspy (1 of 3), about 3m11s left"
    assert schedule.left_s() == total
    clock.now += 5
    assert schedule.left_s() == total - 5  # the running step's time counts
    clock.now += 135  # natspy took 140 s, twice what was expected: the rest will too
    schedule.finish("natspy")
    assert schedule.pace() == 2.0
    line = schedule.start("connector")
    assert schedule.left_s() == 2 * (EXPECTED_FULL_S["connector"] + EXPECTED_FULL_S["filestore"])
    assert line == "benchmark: connector (2 of 3), about 4m02s left"
    clock.now += 1000  # far slower than even that: never below nothing
    assert schedule.left_s() == 0.0
    schedule.finish("connector")
    assert schedule.start("filestore").endswith("(3 of 3), about 6m45s left")  # 50 s x 1140 / 141, rounded up


def test_a_fast_machine_gets_a_shorter_estimate() -> None:
    clock = FakeClock()
    schedule = Schedule(QUICK_FAMILIES, quick=True, clock=clock)
    schedule.start("natspy and cpu")
    clock.now += EXPECTED_QUICK_S["natspy"] / 2
    schedule.finish("natspy and cpu")
    schedule.start("connector")
    rest = sum(schedule.expected_s[s] for s in schedule.steps[1:])
    assert schedule.left_s() == rest / 2


def test_status_lines_only_on_a_terminal() -> None:
    piped = io.StringIO()
    StatusLine(piped).show("benchmark: natspy (1 of 1), about 20s left")
    assert piped.getvalue() == ""
    terminal = FakeTerminal()
    StatusLine(terminal).show("benchmark: natspy (1 of 1), about 20s left")
    assert terminal.getvalue() == "benchmark: natspy (1 of 1), about 20s left\n"


def test_the_job_on_a_terminal_says_which_family_runs_and_the_time_left() -> None:
    """The cheapest family, quick, as a child process with stderr on a pseudo-terminal;
    stdout (the figures and the report) carries no status line."""
    shown = run_on_terminal([sys.executable, "-m", "jobs.benchmark", "--quick", "--only", "natspy"],
                            cwd=REPO, timeout=240)  # `jobs` is the repository's, not installed
    expected = f"about {EXPECTED_QUICK_S['natspy']:.1f}s left"
    assert re.search(r"^benchmark: natspy \(1 of 1\), " + re.escape(expected) + "$",
                     shown.terminal, re.MULTILINE), shown.terminal
    assert "benchmark: " not in shown.stdout
    assert "natspy: " in shown.stdout and "Quick benchmark, " in shown.stdout
