"""docs/main-job.md: every shell command in it runs.

`make demo` is checked with make's dry run (it runs the job with its defaults,
which `test_orders_pipeline` runs on a smaller sample); each job command line
runs through the job's entry point on the suite's Spark session, with its
`--data-dir` moved into a temporary directory.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from jobs.orders_pipeline import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "main-job.md"
JOB = ".venv/bin/python -m jobs.orders_pipeline"


def shell_commands() -> list[str]:
    """The commands of the page's ```sh blocks (continuation lines joined, comments dropped)."""
    blocks = re.findall(r"^```sh\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.S | re.M)
    commands: list[str] = []
    for block in blocks:
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("#", 1)[0].strip()
            if command:
                commands.append(" ".join(command.split()))
    return commands


def test_the_page_holds_only_commands_that_this_file_runs() -> None:
    commands = shell_commands()
    assert "make demo" in commands
    assert [c for c in commands if c != "make demo" and not c.startswith(JOB + " ")] == []


def test_make_demo_runs_the_job_with_its_defaults() -> None:
    # --no-print-directory: under `make test` (MAKELEVEL set) make would add "Leaving directory"
    dry = subprocess.run(["make", "--no-print-directory", "-n", "demo"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    assert dry.stdout.splitlines()[-1] == JOB


@pytest.mark.parametrize("command", sorted({c for c in shell_commands() if c.startswith(JOB + " ")}))
def test_each_job_command_of_the_page_passes_its_checks(spark, tmp_path: Path, capsys, command: str) -> None:  # type: ignore[no-untyped-def]
    args = shlex.split(command)[len(shlex.split(JOB)) :]
    assert "--data-dir" in args, "a documented run names its data directory"
    args[args.index("--data-dir") + 1] = str(tmp_path / "data")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "all checks passed" in out
    assert "CPU s: both queries" in out
