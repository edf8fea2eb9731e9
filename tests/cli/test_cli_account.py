"""`jetstream account info` against both servers."""

from __future__ import annotations

from cli_helpers import jetstream, jetstream_json

from jetstream_testing.process import ServerProcess


def test_info_text(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    text = jetstream(server, "account", "info").stdout
    rows = [line.strip() for line in text.splitlines()]
    assert rows[0] == "Account Information"
    assert f"Connected URL: {server.url}" in rows
    assert "Headers Supported: true" in rows
    assert "JetStream Account Information:" in rows
    assert "Streams: 1" in rows and "Consumers: 0" in rows
    assert "Tier: Default:" in rows
    assert "Streams: 1 of Unlimited" in rows


def test_info_json_matches_nats_server(server: ServerProcess, reference: ServerProcess) -> None:
    answers = []
    for target in (server, reference):
        jetstream(target, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
        jetstream(target, "consumer", "add", "ORDERS", "c", "--pull", "--defaults")
        answers.append(jetstream_json(target, "account", "info"))
    ours, theirs = answers
    assert (ours["limits"], ours["streams"], ours["consumers"], ours["memory"]) == (
        theirs["limits"], theirs["streams"], theirs["consumers"], theirs["memory"])
