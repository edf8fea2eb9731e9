"""nats.py's own test suites against both servers: a developer command, not CI.

nats.py's harnesses start ``nats-server`` from PATH with nats-server's flags. A
shim directory holds a ``nats-server`` that runs either the real binary or the
bundled server (``python -m jetstream_server``, which takes the same flags), and
goes first on PATH; each suite runs once per server, in order (the suites use
fixed ports, 4222 and up), with a JUnit report per run. `compare` then lists the
tests that pass on nats-server and not on the bundled server (the defects).

Suites (`SUITES`): the JetStream tests of the `nats` package (``nats/tests/test_js.py``,
Python 3.8+) and the split clients' suites (``nats-core``, ``nats-jetstream``,
``nats-key-value``; they need Python 3.13: a `python` of that version is given
with ``--python313``, else they are reported as not run). The nats.py checkout
is the developer's: this repository holds no nats.py code, and CI has no network
to fetch one, which is why this is a command and not part of ``make test``.
Tests of clustering (they start several servers with ``--routes``) are not
counted (`CLUSTER_MARKERS`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from jetstream_testing.process import nats_server_binary

KINDS: Final = ("nats-server", "bundled")
CLUSTER_MARKERS: Final = ("cluster", "Cluster")  # test names of clustering tests


@dataclass(frozen=True)
class Suite:
    name: str
    directory: str  # inside the nats.py checkout
    tests: str  # what pytest runs, relative to `directory`
    packages: tuple[str, ...]  # what pip installs, relative to the checkout
    python313: bool  # needs Python 3.13


SUITES: Final = (
    Suite("nats (test_js.py)", "nats", "tests/test_js.py", ("nats",), False),
    Suite("nats-core", "nats-core", "tests", ("nats-server", "nats-core[nkeys,websocket]"), True),
    Suite("nats-jetstream", "nats-jetstream", "tests", ("nats-server", "nats-core", "nats-jetstream"), True),
    Suite("nats-key-value", "nats-key-value", "tests",
          ("nats-server", "nats-core", "nats-jetstream", "nats-key-value"), True),
)
TEST_DEPS: Final = ("pytest", "pytest-asyncio", "pytest-timeout", "nkeys", "aiohttp")


@dataclass
class Outcome:
    """One suite on one server: test id -> passed (True), failed (False); skipped left out."""

    suite: str
    server: str
    results: dict[str, bool] = field(default_factory=dict)
    note: str = ""

    @property
    def passed(self) -> int:
        return sum(self.results.values())

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed


def make_shim(directory: Path, kind: str) -> Path:
    """A directory whose `nats-server` runs `kind` with the flags it is given."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "nats-server"
    if kind == "bundled":
        target = f'exec "{sys.executable}" -m jetstream_server "$@"'
    else:
        target = f'exec "{nats_server_binary()}" "$@"'
    shim.write_text(f"#!/bin/sh\n{target}\n")
    shim.chmod(0o755)
    return directory


def make_venv(python: str, where: Path, checkout: Path, suite: Suite) -> Path:
    """A virtual environment with `suite`'s packages (from the checkout) and test tools."""
    if not (where / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    packages = []
    for spec in suite.packages:
        name, _, extra = spec.partition("[")
        packages.append(str(checkout / name) + (f"[{extra}" if extra else ""))
    subprocess.run([*pip, *packages, *TEST_DEPS], check=True)
    return where / "bin" / "python"


def run_suite(python: Path, checkout: Path, suite: Suite, kind: str, work: Path,
              timeout_s: int = 3600) -> Outcome:
    shim = make_shim(work / f"shim-{kind}", kind)
    report = work / f"{suite.directory}-{kind}.xml"
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [
        str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
        # test_js.py reaches unittest.mock through `unittest` without importing it
        "-p", "unittest.mock",
        "-o", "asyncio_mode=auto", "--timeout", "180", f"--junitxml={report}", suite.tests,
    ]
    try:
        subprocess.run(command, cwd=checkout / suite.directory, env=env, timeout=timeout_s,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome(suite.name, kind, note=f"timed out after {timeout_s} s")
    return Outcome(suite.name, kind, read_junit(report))


def read_junit(report: Path) -> dict[str, bool]:
    results: dict[str, bool] = {}
    if not report.exists():
        return results
    for case in ET.parse(report).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        if any(marker in test for marker in CLUSTER_MARKERS):
            continue
        if case.find("skipped") is not None:
            continue
        results[test] = case.find("failure") is None and case.find("error") is None
    return results


def compare(real: Outcome, bundled: Outcome) -> list[str]:
    """Tests that pass on nats-server and not on the bundled server."""
    return sorted(t for t, ok in real.results.items() if ok and not bundled.results.get(t, False))


def run_all(checkout: Path, work: Path, python313: str | None,
            only: str | None = None) -> list[tuple[Outcome, Outcome, list[str]]]:
    out: list[tuple[Outcome, Outcome, list[str]]] = []
    for suite in SUITES:
        if only and only not in suite.name:
            continue
        python = python313 if suite.python313 else sys.executable
        if python is None or shutil.which(python) is None and not Path(python).exists():
            note = "not run: needs Python 3.13 (--python313)"
            out.append((Outcome(suite.name, KINDS[0], note=note), Outcome(suite.name, KINDS[1], note=note), []))
            continue
        venv = make_venv(python, work / f"venv-{suite.directory}", checkout, suite)
        real, ours = (run_suite(venv, checkout, suite, kind, work) for kind in KINDS)
        out.append((real, ours, compare(real, ours)))
    return out


def format_report(rows: list[tuple[Outcome, Outcome, list[str]]]) -> str:
    lines = ["| suite | nats-server passed / failed | bundled passed / failed | pass on nats-server only |",
             "|---|---|---|---|"]
    for real, ours, only_real in rows:
        if real.note:
            lines.append(f"| {real.suite} | {real.note} | {ours.note} | |")
            continue
        lines.append(f"| {real.suite} | {real.passed} / {real.failed} | {ours.passed} / {ours.failed} "
                     f"| {len(only_real)} |")
    for real, _, only_real in rows:
        for test in only_real:
            lines.append(f"- {real.suite}: {test}")
    return "\n".join(lines)
