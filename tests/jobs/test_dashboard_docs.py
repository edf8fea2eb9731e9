"""The shell commands of docs/dashboard.md, as written (ports and the server's URL put in
place of the page's 8222, 8080 and nats://127.0.0.1:4222): the bundled server's
dashboard, `jetstream dashboard` on both servers, and the benchmark's `dashboard` family
(with `--quick`: 200 streams instead of 5,000)."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from cli_helpers import jetstream
from dashboard_helpers import check_shape, dashboard_command, data, get

from jetstream_testing.process import ServerProcess
from jobs.benchmark import main as benchmark

DOC = Path(__file__).resolve().parents[2] / "docs" / "dashboard.md"
COMMANDS = [
    "jetstream-server -js -m 8222",
    "jetstream dashboard --server nats://127.0.0.1:4222 --port 8080",
    "jetstream dashboard --server nats://127.0.0.1:4222 --once",
    "python -m jobs.benchmark --only dashboard",
]
DOC_URL = "nats://127.0.0.1:4222"


def test_the_page_runs_exactly_these_commands() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S)
    assert [line for block in blocks for line in block.strip().splitlines()] == COMMANDS


def test_bundled_server_command(tmp_path: Path) -> None:
    argv = shlex.split(COMMANDS[0])
    assert argv[-2:] == ["-m", "8222"]
    program = Path(sys.executable).parent / argv[0]  # the console script of the venv
    proc = ServerProcess([str(program), *argv[1:-2]], store_dir=tmp_path / "store", http_port=-1)
    proc.start()
    try:
        page = f"http://127.0.0.1:{proc.monitor_port}/dashboard/"
        assert get(page)[0] == 200
        assert data(page)["source"] == "jetstream-server"
    finally:
        proc.stop()


def test_cli_commands(server: ServerProcess) -> None:
    serve = shlex.split(COMMANDS[1].replace(DOC_URL, server.url).replace("8080", "0"))
    with dashboard_command(*serve[2:]) as page:
        assert data(page)["source"] == "jetstream-cli"
    once = shlex.split(COMMANDS[2].replace(DOC_URL, server.url))
    answer = json.loads(jetstream(None, *once[1:]).stdout)
    check_shape(answer)


@pytest.mark.timeout(600)
def test_benchmark_family(capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(COMMANDS[3])
    assert argv[:3] == ["python", "-m", "jobs.benchmark"]
    assert benchmark([*argv[3:], "--quick"]) == 0
    out = capsys.readouterr().out
    assert "| dashboard | jetstream dashboard refresh, 200 streams" in out
    assert "| dashboard | data.json of the monitoring port, 200 streams" in out
