"""The `server` fixture's warm spares (tests/support/spare_servers.py): a spare is a server
the test could have started itself, on an empty store of its own, with the test's
environment; when the environment changed since the spare started, a fresh one."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from spare_servers import SparePool


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[SparePool]:
    spares = SparePool(tmp_path / "spares")
    try:
        yield spares
    finally:
        spares.close()


def fresh_dir(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


def serves(url_port: int) -> bool:
    with socket.create_connection(("127.0.0.1", url_port), timeout=10) as sock:
        return sock.recv(4096).startswith(b"INFO {")


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def test_a_spare_serves_on_an_empty_store_linked_from_the_test_store(pool: SparePool, tmp_path: Path) -> None:
    first_dir = fresh_dir(tmp_path, "first")
    first = pool.take("bundled", first_dir)
    try:
        assert serves(first.port) and first.store_dir == str(first_dir)  # no spare yet: started here
        (first_dir / "marker").write_text("first")
    finally:
        first.stop()
    second_dir = fresh_dir(tmp_path, "second")
    second = pool.take("bundled", second_dir)
    try:
        assert serves(second.port)
        assert second.store_dir != str(second_dir) and second_dir.is_symlink()
        assert second_dir.resolve() == Path(str(second.store_dir)).resolve()
        assert not (second_dir / "marker").exists()
    finally:
        second.stop()


def test_a_spare_started_before_an_environment_change_is_not_used(
    pool: SparePool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool.take("bundled", fresh_dir(tmp_path, "first")).stop()  # leaves a spare behind
    monkeypatch.setenv("JS_SPARE_PROBE", "after")
    proc = pool.take("bundled", fresh_dir(tmp_path, "second"))
    try:
        assert proc.store_dir == str(tmp_path / "second")  # started here, not a spare
        assert proc.proc is not None
        assert environ_of(proc.proc.pid).get("JS_SPARE_PROBE") == "after"
    finally:
        proc.stop()
    spare = pool.take("bundled", fresh_dir(tmp_path, "third"))  # the spare started after it
    try:
        assert spare.proc is not None and spare.store_dir != str(tmp_path / "third")
        assert environ_of(spare.proc.pid).get("JS_SPARE_PROBE") == "after"
        assert os.environ["JS_SPARE_PROBE"] == "after"
    finally:
        spare.stop()


def test_nats_server_gets_no_spare(pool: SparePool, tmp_path: Path) -> None:
    for name in ("first", "second"):
        store = fresh_dir(tmp_path, name)
        proc = pool.take("nats-server", store)
        try:
            assert serves(proc.port) and proc.store_dir == str(store)
        finally:
            proc.stop()


def test_the_next_test_gets_the_spare(pool: SparePool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest names the running test in PYTEST_CURRENT_TEST: that change alone keeps the spare."""
    pool.take("bundled", fresh_dir(tmp_path, "first")).stop()
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/x.py::test_next (setup)")
    second_dir = fresh_dir(tmp_path, "second")
    proc = pool.take("bundled", second_dir)
    try:
        assert second_dir.is_symlink() and proc.store_dir != str(second_dir)
    finally:
        proc.stop()
