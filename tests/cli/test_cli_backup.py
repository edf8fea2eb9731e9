"""`jetstream stream backup | restore`: nats-server's snapshot protocol, round trip through
a directory in natscli's layout, and backups moved between the bundled server and
nats-server in both directions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import jetstream, jetstream_json, normalize, one_line_error

from jetstream_testing.process import ServerProcess


def _fill(server: ServerProcess) -> None:
    jetstream(server, "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults")
    jetstream(server, "pub", "orders.new", "order {{Count}}", "--count", "5", "-H", "N:{{Count}}")
    jetstream(server, "consumer", "add", "ORDERS", "worker", "--pull", "--defaults")
    jetstream(server, "consumer", "next", "ORDERS", "worker", "--count", "2")


def test_round_trip_on_nats_server(reference: ServerProcess, tmp_path: Path) -> None:
    _fill(reference)
    before = jetstream_json(reference, "stream", "info", "ORDERS")
    target = tmp_path / "backup"
    backup = jetstream(reference, "stream", "backup", "ORDERS", str(target))
    assert backup.stdout.startswith('Starting backup of Stream "ORDERS" with ')
    assert 'chunks for stream "ORDERS" in ' in backup.stdout
    meta = json.loads((target / "backup.json").read_text())
    assert meta["config"]["name"] == "ORDERS" and meta["state"]["messages"] == 5
    assert (target / "stream.tar.s2").stat().st_size > 0
    jetstream(reference, "stream", "rm", "ORDERS", "-f")
    restored = jetstream(reference, "stream", "restore", str(target))
    assert restored.stdout.startswith(f'Starting restore of Stream "ORDERS" from file "{target}"')
    assert 'Restored stream "ORDERS" in ' in restored.stdout
    assert "Information for Stream ORDERS" in restored.stdout
    after = jetstream_json(reference, "stream", "info", "ORDERS")
    assert normalize(after["state"]) == normalize(before["state"])
    assert jetstream(reference, "stream", "get", "ORDERS", "4").stdout.count("order 4") == 1
    worker = jetstream_json(reference, "consumer", "info", "ORDERS", "worker")
    assert (worker["ack_floor"]["stream_seq"], worker["num_pending"]) == (2, 3)
    again = jetstream(reference, "stream", "restore", str(target), check=False)
    assert one_line_error(again) == 'Stream "ORDERS" already exist'


def test_backup_without_consumers(reference: ServerProcess, tmp_path: Path) -> None:
    _fill(reference)
    jetstream(reference, "stream", "backup", "ORDERS", str(tmp_path / "b"), "--no-consumers")
    jetstream(reference, "stream", "rm", "ORDERS", "-f")
    jetstream(reference, "stream", "restore", str(tmp_path / "b"))
    assert jetstream_json(reference, "consumer", "ls", "ORDERS") == []
    assert jetstream_json(reference, "stream", "info", "ORDERS")["state"]["messages"] == 5


def test_memory_streams_cannot_be_backed_up(server: ServerProcess, tmp_path: Path) -> None:
    jetstream(server, "stream", "add", "MEM", "--subjects", "mem.>", "--storage", "memory",
              "--defaults")
    result = jetstream(server, "stream", "backup", "MEM", str(tmp_path / "b"), check=False)
    assert one_line_error(result) == "snapshot failed: memory streams do not support snapshots"


def test_backup_moves_between_servers(server: ServerProcess, reference: ServerProcess,
                                      server_kind: str, tmp_path: Path) -> None:
    """A backup made on nats-server restores on the bundled server and the other way
    round: same messages, same state, the consumer's ack floor kept."""
    if server_kind == "nats-server":
        pytest.skip("nats-server to nats-server is test_round_trip_on_nats_server")
    _fill(reference)
    expected = jetstream_json(reference, "stream", "info", "ORDERS")["state"]
    jetstream(reference, "stream", "backup", "ORDERS", str(tmp_path / "from-nats"))
    restored = jetstream(server, "stream", "restore", str(tmp_path / "from-nats"))
    assert 'Restored stream "ORDERS" in ' in restored.stdout
    assert normalize(jetstream_json(server, "stream", "info", "ORDERS")["state"]) == \
        normalize(expected)
    worker = jetstream_json(server, "consumer", "info", "ORDERS", "worker")
    assert (worker["ack_floor"]["stream_seq"], worker["num_pending"]) == (2, 3)
    backup = jetstream(server, "stream", "backup", "ORDERS", str(tmp_path / "from-server"))
    assert 'chunks for stream "ORDERS" in ' in backup.stdout
    jetstream(reference, "stream", "rm", "ORDERS", "-f")
    jetstream(reference, "stream", "restore", str(tmp_path / "from-server"))
    assert normalize(jetstream_json(reference, "stream", "info", "ORDERS")["state"]) == \
        normalize(expected)


def test_restore_errors(server: ServerProcess, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = jetstream(server, "stream", "restore", str(empty), check=False)
    assert one_line_error(result).startswith("restore failed: No such file or directory: ")
    missing = jetstream(server, "stream", "restore", str(tmp_path / "nope"), check=False)
    assert "does not exist" in one_line_error(missing)
