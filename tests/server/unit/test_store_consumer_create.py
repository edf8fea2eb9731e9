"""A durable consumer's create and update fsync its files on the disk thread
and are answered only once those fsyncs are done (api/consumers.py,
consumer/store.py `defer_fsyncs`).

The real engine with the server's `LoopClock` and the in-memory router
double, on a real store directory; `os.fsync` slowed down (disk_probe): every
fsync must run on the disk thread (the loop's stall meanwhile is printed, not
asserted: a loaded machine can stretch any stall; `python -m jobs.hostile`
measures stalls). Before, the create fsynced meta.json, o.dat and the
new directories on the loop: FSYNC_S each.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from disk_probe import LagMeter, SlowFsync
from loop_engine import API, LoopEngine
from waits import until

pytestmark = pytest.mark.asyncio

FSYNC_S = 0.3


class Env(LoopEngine):
    def __init__(self, store_dir: Path, sync_always: bool) -> None:
        super().__init__(store_dir, sync_always)
        self.obs = self.streams / "S" / "obs"
        # with sync_always, answered once its files are fsynced on the disk thread
        self.stream_made = self.router.request(API + "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})

    async def create(self, config: dict[str, Any]) -> tuple[Any, bool]:
        """Send a create; its answer, and whether it came before the call returned."""
        await until(lambda: bool(self.stream_made))
        assert "error" not in self.stream_made[0].json()
        return await self.ask("CONSUMER.CREATE.S.C", {"stream_name": "S", "config": config})


@pytest.mark.parametrize("sync_always", [False, True])
async def test_create_and_update_answer_after_fsyncs_on_the_disk_thread(
    tmp_path: Path, sync_always: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path, sync_always)
    slow_fsync = SlowFsync(FSYNC_S)
    monkeypatch.setattr(os, "fsync", slow_fsync)
    meter = LagMeter()
    meter.start()
    try:
        config = {"durable_name": "C", "ack_policy": "explicit"}
        info, at_once = await env.create(config)
        assert "error" not in info and info["name"] == "C", info
        assert not at_once, "answered before its files were fsynced"
        created_calls = list(slow_fsync.calls)
        slow_fsync.calls.clear()
        info, at_once = await env.create({**config, "description": "updated"})
        assert info["config"]["description"] == "updated" and not at_once, info
        updated_calls = list(slow_fsync.calls)
    finally:
        lag = await meter.stop()
        monkeypatch.undo()
        env.close()
    print(f"loop stall while creating a consumer: {lag * 1000:.1f} ms")
    synced = {call.path for call in created_calls}
    consumer_dir = env.obs / "C"
    assert str(consumer_dir / "meta.json") in synced, synced
    assert {str(consumer_dir), str(env.obs)} <= synced, synced  # the new entries are durable
    if sync_always:
        assert str(consumer_dir / "o.dat") in synced, synced
    assert str(consumer_dir / "meta.json") in {call.path for call in updated_calls}
    threads = {call.thread for call in created_calls + updated_calls}
    assert threads and all(t.startswith("jetstream-disk") for t in threads), threads


async def test_create_whose_fsync_fails_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path, sync_always=False)
    failing = SlowFsync(0.0, fail=OSError(errno.EIO, "Input/output error"))
    monkeypatch.setattr(os, "fsync", failing)
    try:
        info, _ = await env.create({"durable_name": "C", "ack_policy": "explicit"})
        monkeypatch.undo()
        assert info["error"]["err_code"] == 10012, info
        assert "not created: input/output error" in info["error"]["description"], info
        assert env.router.request_json(API + "CONSUMER.INFO.S.C")["error"]["err_code"] == 10014
        assert not (env.obs / "C").exists()
        names = env.router.request_json(API + "CONSUMER.NAMES.S")
        assert names["consumers"] == [], names
    finally:
        monkeypatch.undo()
        env.close()


async def test_the_same_create_twice_is_answered_once_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client repeating its create (a retry after a timeout) while the first
    one's fsyncs run: the repeat is not answered before the files are durable."""
    env = Env(tmp_path, sync_always=False)
    slow = SlowFsync(FSYNC_S)
    monkeypatch.setattr(os, "fsync", slow)
    try:
        body = {"stream_name": "S", "config": {"durable_name": "C", "ack_policy": "explicit"}}
        first = env.router.request(API + "CONSUMER.CREATE.S.C", body)
        second = env.router.request(API + "CONSUMER.CREATE.S.C", body)
        assert not first and not second, "answered before its files were fsynced"
        await until(lambda: bool(first) and bool(second))
        assert first[0].json()["name"] == second[0].json()["name"] == "C"
        assert str(env.obs / "C" / "meta.json") in {call.path for call in slow.calls}
    finally:
        monkeypatch.undo()
        env.close()
