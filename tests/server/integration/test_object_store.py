"""Object store through nats-py (ADR-20): streams + consumers only, no server code of
its own. Bundled server and real nats-server."""

from __future__ import annotations

import os

import nats.js.errors
import pytest
from nats.js import JetStreamContext

pytestmark = pytest.mark.asyncio


async def test_put_get_multi_chunk_info_list_delete(js: JetStreamContext) -> None:
    obs = await js.create_object_store("files")
    blob = os.urandom(300 * 1024 + 17)  # three 128 KiB chunks
    info = await obs.put("big.bin", blob)
    assert info.size == len(blob) and info.chunks == 3
    got = await obs.get("big.bin")
    assert got.data == blob and got.info.digest == info.digest
    await obs.put("small.txt", b"hello")
    assert (await obs.get("small.txt")).data == b"hello"
    names = sorted(o.name for o in await obs.list())
    assert names == ["big.bin", "small.txt"]
    # overwrite replaces the chunks
    await obs.put("small.txt", b"hello again")
    assert (await obs.get("small.txt")).data == b"hello again"
    await obs.delete("big.bin")
    with pytest.raises(nats.js.errors.ObjectNotFoundError):
        await obs.get("big.bin")
    deleted = await obs.get_info("big.bin", show_deleted=True)
    assert deleted.deleted
    listed = await obs.list(ignore_deletes=True)
    assert [o.name for o in listed] == ["small.txt"]
    stream = await js.stream_info("OBJ_files")
    # only the live object's chunk and the two metadata entries remain
    assert stream.state.messages == 3


async def test_watch_and_seal(js: JetStreamContext) -> None:
    obs = await js.create_object_store("w")
    await obs.put("a", b"A")
    watcher = await obs.watch()
    first = await watcher.updates(timeout=2)
    assert first is not None and first.name == "a"
    assert await watcher.updates(timeout=2) is None  # end of the initial values
    await obs.put("b", b"B")
    nxt = await watcher.updates(timeout=2)
    assert nxt is not None and nxt.name == "b"
    await watcher.stop()

    await obs.seal()
    assert (await obs.status()).sealed
    with pytest.raises(nats.js.errors.BadRequestError):
        await obs.put("c", b"C")
    again = await js.object_store("w")
    assert (await again.get("b")).data == b"B"
