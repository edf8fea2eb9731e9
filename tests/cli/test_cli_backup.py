"""`jetstream stream backup | restore`: nats-server's snapshot protocol, round trip through
a directory in natscli's layout; the bundled server (no snapshot API yet) fails with a
message that says so."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_server_without_snapshot_api(server: ServerProcess, reference: ServerProcess,
                                     server_kind: str, tmp_path: Path) -> None:
    """The bundled server has no $JS.API.STREAM.SNAPSHOT / RESTORE yet: both commands stop
    with one line that says so (nats-server, which has them, succeeds)."""
    _fill(reference)
    jetstream(reference, "stream", "backup", "ORDERS", str(tmp_path / "from-nats"))
    _fill(server)
    backup = jetstream(server, "--timeout", "1s", "stream", "backup", "ORDERS",
                       str(tmp_path / "b"), check=False)
    jetstream(server, "stream", "rm", "ORDERS", "-f")
    restore = jetstream(server, "--timeout", "1s", "stream", "restore",
                        str(tmp_path / "from-nats"), check=False)
    if server_kind == "nats-server":
        assert backup.returncode == 0 and restore.returncode == 0
        assert jetstream_json(server, "stream", "info", "ORDERS")["state"]["messages"] == 5
        return
    assert one_line_error(backup) == (
        "this server does not support stream snapshots ($JS.API.STREAM.SNAPSHOT): no answer to "
        "$JS.API.STREAM.SNAPSHOT.ORDERS within 1s; back up from a nats-server")
    assert one_line_error(restore) == (
        "this server does not support stream snapshots ($JS.API.STREAM.RESTORE): no answer to "
        "$JS.API.STREAM.RESTORE.ORDERS within 1s; back up from a nats-server")


def test_restore_errors(server: ServerProcess, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = jetstream(server, "stream", "restore", str(empty), check=False)
    assert one_line_error(result).startswith("restore failed: No such file or directory: ")
    missing = jetstream(server, "stream", "restore", str(tmp_path / "nope"), check=False)
    assert "does not exist" in one_line_error(missing)
