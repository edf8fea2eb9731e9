"""Key-value buckets through nats-py (ADR-8): streams + consumers only, no KV server code.
Bundled server and real nats-server."""

from __future__ import annotations

import asyncio

import nats.js.errors
import pytest
from nats.js import JetStreamContext
from nats.js.kv import KV_DEL, KV_PURGE

pytestmark = pytest.mark.asyncio


async def test_put_get_create_update_delete_purge(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket="cfg", history=5)
    rev1 = await kv.put("a", b"1")
    assert (await kv.get("a")).value == b"1"
    rev2 = await kv.put("a", b"2")
    assert rev2 == rev1 + 1
    entry = await kv.get("a")
    assert entry.value == b"2" and entry.revision == rev2
    with pytest.raises(nats.js.errors.KeyWrongLastSequenceError):
        await kv.create("a", b"again")
    rev3 = await kv.update("a", b"3", last=rev2)
    with pytest.raises(nats.js.errors.KeyWrongLastSequenceError):
        await kv.update("a", b"4", last=rev2)
    assert (await kv.get("a")).revision == rev3
    rev_b = await kv.create("b", b"new")
    assert rev_b == rev3 + 1
    await kv.delete("b")
    with pytest.raises(nats.js.errors.KeyNotFoundError):
        await kv.get("b")
    # create over a deleted key is allowed
    await kv.create("b", b"back")
    assert (await kv.get("b")).value == b"back"
    await kv.purge("a")
    with pytest.raises(nats.js.errors.KeyNotFoundError):
        await kv.get("a")
    history = await kv.history("a")
    assert len(history) == 1 and history[0].operation == KV_PURGE
    assert sorted(await kv.keys()) == ["b"]
    status = await kv.status()
    assert status.bucket == "cfg" and status.history == 5


async def test_history_keys_and_purge_deletes(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket="h", history=3)
    for i in range(5):
        await kv.put("k", b"%d" % i)
    await kv.put("other.x", b"o")
    hist = await kv.history("k")
    assert [e.value for e in hist] == [b"2", b"3", b"4"]
    assert sorted(await kv.keys()) == ["k", "other.x"]
    await kv.delete("other.x")
    await kv.purge_deletes(olderthan=-1)
    assert await kv.keys() == ["k"]
    kv2 = await js.key_value("h")
    assert (await kv2.get("k")).value == b"4"


async def test_watch_initial_values_then_updates(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket="w")
    await kv.put("x", b"1")
    await kv.put("y", b"2")
    await kv.put("x", b"3")
    watcher = await kv.watchall()
    initial = []
    while True:
        entry = await watcher.updates(timeout=2)
        if entry is None:  # end of the initial values
            break
        initial.append((entry.key, entry.value))
    assert initial == [("y", b"2"), ("x", b"3")]
    await kv.put("z", b"4")
    await kv.delete("y")
    upd = await watcher.updates(timeout=2)
    assert (upd.key, upd.value) == ("z", b"4")
    deleted = await watcher.updates(timeout=2)
    assert deleted.key == "y" and deleted.operation == KV_DEL
    await watcher.stop()


async def test_watch_empty_bucket_signals_end_of_initial(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket="e")
    watcher = await kv.watch("k.*")
    assert await watcher.updates(timeout=2) is None
    await kv.put("k.1", b"v")
    entry = await watcher.updates(timeout=2)
    assert entry.key == "k.1"
    await watcher.stop()


async def test_ttl_bucket(js: JetStreamContext) -> None:
    kv = await js.create_key_value(bucket="t", ttl=1)
    await kv.put("gone", b"soon")
    assert (await kv.get("gone")).value == b"soon"
    deadline = asyncio.get_running_loop().time() + 4
    while True:
        try:
            await kv.get("gone")
        except nats.js.errors.KeyNotFoundError:
            break
        assert asyncio.get_running_loop().time() < deadline, "key did not expire"
        await asyncio.sleep(0.2)
