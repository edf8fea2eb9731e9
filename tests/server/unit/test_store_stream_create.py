"""A file stream's create fsyncs nothing on the event loop (api/streams.py,
jetstream/persistence.py `create_stream_dir`, engine `create_stream`).

nats-server writes a new stream's meta files without fsync unless `sync_always`
is on: what was written is the OS's, so a create survives a process kill (the
kill test is tests/server/integration/test_faults.py). Without `sync_always`,
then, no fsync at all; with it, the meta file and the new directory entries are
fsynced on the disk thread and the create is answered once they are done, a
failed fsync taking the stream away again (10049). Before, every file stream
create made about five fsyncs on the loop (25 ms each on a busy disk: nats.py's
300 creates in 5 s timed out).

The real engine with the server's `LoopClock` and the in-memory router double,
on a real store directory; `os.fsync` recorded and slowed down (disk_probe).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from disk_probe import SlowFsync
from loop_engine import API, LoopEngine
from waits import until

pytestmark = pytest.mark.asyncio

FSYNC_S = 0.05


class Env(LoopEngine):
    async def create(self, name: str) -> tuple[Any, bool]:
        return await self.ask(f"STREAM.CREATE.{name}", {"name": name, "subjects": [name]})


async def test_a_create_without_sync_always_fsyncs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path, sync_always=False)
    recorder = SlowFsync(0.0)
    monkeypatch.setattr(os, "fsync", recorder)
    try:
        for name in ("A", "B"):
            info, at_once = await env.create(name)
            assert "error" not in info and at_once, info
    finally:
        monkeypatch.undo()
        env.close()
    assert recorder.calls == []
    assert (env.streams / "B" / "meta.json").exists() and (env.streams / "B" / "msgs").is_dir()


async def test_a_create_with_sync_always_is_answered_after_its_fsyncs_on_the_disk_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path, sync_always=True)
    slow = SlowFsync(FSYNC_S)
    monkeypatch.setattr(os, "fsync", slow)
    try:
        info, at_once = await env.create("A")
        body = {"name": "A", "subjects": ["A"]}
        first = env.router.request(API + "STREAM.CREATE.C", {**body, "name": "C", "subjects": ["C"]})
        again = env.router.request(API + "STREAM.CREATE.C", {**body, "name": "C", "subjects": ["C"]})
        assert not first and not again, "answered before its files were fsynced"
        await until(lambda: bool(first) and bool(again))
    finally:
        monkeypatch.undo()
        env.close()
    assert "error" not in info and not at_once, info
    assert first[0].json()["config"]["name"] == again[0].json()["config"]["name"] == "C"
    synced = [call.path for call in slow.calls]
    stream_dir = env.streams / "A"
    # the meta file first, then the directory entries that make it and `msgs` reachable
    assert synced[:3] == [str(stream_dir / "meta.json"), str(stream_dir), str(env.streams)], synced
    assert slow.threads and all(t.startswith("jetstream-disk") for t in slow.threads), slow.threads


async def test_a_create_whose_fsync_fails_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path, sync_always=True)
    failing = SlowFsync(0.0, fail=OSError(errno.EIO, "Input/output error"))
    monkeypatch.setattr(os, "fsync", failing)
    try:
        info, _ = await env.create("A")
        monkeypatch.undo()
        assert info["error"]["err_code"] == 10049, info
        assert "stream A not created: input/output error" in info["error"]["description"], info
        assert env.router.request_json(API + "STREAM.INFO.A")["error"]["err_code"] == 10059
        assert not (env.streams / "A").exists()
        info, _ = await env.create("A")  # the name is free again
        assert "error" not in info, info
    finally:
        monkeypatch.undo()
        env.close()
