"""`jetstream server check connection | jetstream`: natscli's Nagios-style checks."""

from __future__ import annotations

import json
import re

from cli_helpers import jetstream

from jetstream_testing.process import ServerProcess, nats_server_binary


def test_connection_ok(server: ServerProcess) -> None:
    result = jetstream(server, "server", "check", "connection")
    assert re.fullmatch(
        rf"OK Connection OK:connected to {re.escape(server.url)} in \S+ OK:rtt time \S+ "
        r"OK:round trip took \d+\.\d{6}s \| connect_time=\d+\.\d{4}s;0\.5000;1\.0000 "
        r"rtt=\d+\.\d{4}s;0\.5000;1\.0000 request_time=\d+\.\d{4}s;0\.5000;1\.0000\n",
        result.stdout)
    data = json.loads(jetstream(server, "server", "check", "conn", "--format", "json").stdout)
    assert (data["status"], data["check_suite"], data["check_name"]) == (
        "OK", "connections", "Connection")
    assert [p["name"] for p in data["perf_data"]] == ["connect_time", "rtt", "request_time"]


def test_connection_critical_when_down() -> None:
    result = jetstream("nats://127.0.0.1:1", "server", "check", "connection", check=False)
    assert result.returncode == 2
    assert result.stdout.startswith(
        "CRITICAL Connection Crit:connection failed: could not connect to nats://127.0.0.1:1")
    assert result.stderr == ""


def test_jetstream_ok(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    result = jetstream(server, "server", "check", "jetstream")
    assert result.stdout.startswith("OK JetStream | memory=0B memory_pct=0%;75;90 storage=")
    assert "streams=1 streams_pct=0% consumers=0 consumers_pct=0% replicas_ok=1" in result.stdout
    text = jetstream(server, "server", "check", "js", "--format", "text").stdout
    assert text.startswith("JetStream: OK\n") and "Check Metrics" in text


class _NoJetStream(ServerProcess):
    """nats-server started without -js (the harness always passes it)."""

    def argv(self) -> list[str]:
        return [arg for arg in super().argv() if arg != "-js"]


def test_jetstream_critical_when_disabled() -> None:
    with _NoJetStream([nats_server_binary()]) as plain:
        result = jetstream(plain, "server", "check", "jetstream", check=False)
    assert result.returncode == 2
    assert result.stdout.startswith("CRITICAL JetStream Crit:JetStream not available: ")
