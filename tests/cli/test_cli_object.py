"""`jetstream object ...` against both servers."""

from __future__ import annotations

import hashlib
from pathlib import Path

from cli_helpers import jetstream, one_line_error

from jetstream_testing.process import ServerProcess


def test_add_put_get_ls(server: ServerProcess, tmp_path: Path) -> None:
    added = jetstream(server, "object", "add", "FILES", "--description", "files")
    assert added.stdout.startswith("Information for Object Store Bucket FILES created ")
    assert "JetStream Stream: OBJ_FILES" in added.stdout
    source = tmp_path / "report.bin"
    payload = bytes(range(256)) * 600  # several chunks
    source.write_bytes(payload)
    put = jetstream(server, "object", "put", "FILES", str(source), "--name", "report.bin")
    assert "Object information for FILES > report.bin" in put.stdout
    digest = hashlib.sha256(payload).hexdigest()
    assert f"Digest: SHA-256 {digest}" in put.stdout
    assert "Size: 150 KiB" in put.stdout
    again = jetstream(server, "object", "put", "FILES", str(source), "--name", "report.bin",
                      input="n\n")
    assert "Replace existing file FILES > report.bin" in again.stderr
    target = tmp_path / "out.bin"
    got = jetstream(server, "object", "get", "FILES", "report.bin", "-O", str(target))
    assert got.stdout.startswith(f"Wrote: 150 KiB to {target} in ")
    assert target.read_bytes() == payload
    listed = jetstream(server, "object", "ls", "FILES").stdout.splitlines()
    assert [c.strip() for c in listed[3].split("│")[1:-1]] == ["Name", "Size", "Time"]
    assert [c.strip() for c in listed[5].split("│")[1:-1]][:2] == ["report.bin", "150 KiB"]
    assert jetstream(server, "object", "ls", "-n").stdout == "FILES\n"
    info = jetstream(server, "object", "info", "FILES", "report.bin").stdout
    assert "Chunks: 2" in info
    jetstream(server, "object", "del", "FILES", "report.bin", "-f")
    assert jetstream(server, "object", "ls", "FILES").stdout == "No entries found\n"
    missing = jetstream(server, "object", "get", "FILES", "report.bin", "-O", str(target),
                        check=False)
    assert one_line_error(missing) == "object 'report.bin' not found in bucket 'FILES'"
    assert one_line_error(jetstream(server, "object", "ls", "NOPE", check=False)) == (
        "object store bucket 'NOPE' not found")
