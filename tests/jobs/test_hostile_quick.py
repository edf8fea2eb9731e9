"""`python -m jobs.hostile --quick` runs every hostile scenario (small sizes) on the
bundled server and prints its table: the command cannot rot. Stall figures are
printed, never asserted (docs/hostile-clients.md has the full run's); what is
asserted is what the hostile client saw, which does not depend on the machine."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jetstream_testing.hostile import SCENARIOS

pytestmark = pytest.mark.timeout(600)


def test_quick_run_of_every_scenario_on_the_bundled_server() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "jobs.hostile", "--quick", "--servers", "bundled"],
        capture_output=True, text=True, timeout=540,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {line.split("|")[1].strip(): line for line in proc.stdout.splitlines()
            if line.startswith("| ") and "| bundled |" in line}
    assert set(rows) == {s.name for s in SCENARIOS}, proc.stdout
    outcome = {name: line.split("|")[-2].strip() for name, line in rows.items()}
    assert outcome["permission tricks"] == (
        "ack reply refused, import reply refused, gateway reply refused, queue _sys_ refused, "
        "$NRG publish refused, $SYS request unanswered")
    assert outcome["DIRECT.GET batch 1,000,000 over max_pending"].endswith("then 204 EOB")
    assert outcome["closing a connection with 200,000 SUBs"] == "closed; its subscriptions gone"
    assert outcome["2,000 stream creates, one after another"].endswith("for the last 10")
    for name in ("SUB of a 1 MB literal subject", "SUB of a 1 MB wildcard subject (512k tokens)",
                 "256 KiB of 4 KB SUBs (2,000 tokens each)", "200,000 SUBs on one connection"):
        assert outcome[name] == "applied, connection open", (name, outcome[name])
