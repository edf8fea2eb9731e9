"""Block compaction off the event loop (store/compactor.py, store/compaction.py, FileStore).

A real `FileStore` on a real directory with the server's `LoopClock`: its
disk thread does the compaction's reads, writes, fsyncs, renames and
unlinks. `os.fsync` is slowed down (and each call's thread recorded) so a
compaction takes long enough to measure the loop meanwhile and to land
deletes, erases and reads while it is in flight. Every fsync of a compaction
must run on the disk thread (the loop's stall meanwhile is printed, not
asserted: a loaded machine can stretch any stall); before, the whole
compaction ran on the loop: its fsyncs alone stalled it FSYNC_S per call.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from disk_probe import LagMeter, SlowFsync
from waits import until

from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.store import compactor as compactor_module
from jetstream_server.store.file import FileStore

FSYNC_S = 0.4  # each fsync's time, on whichever thread makes it
BLOCK = 256 * 1024


def payload(seq: int) -> bytes:
    return b"<%08d>" % seq * 100  # 1000 bytes, unique per sequence


def block_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((directory / "msgs").glob("*.blk")))


def check_contents(store: FileStore, present: dict[int, str], gone: set[int]) -> None:
    for seq, subject in present.items():
        msg = store.load(seq)
        assert msg is not None, f"message {seq} lost"
        assert (msg.subject, msg.data) == (subject, payload(seq)), seq
    for seq in gone:
        assert store.load(seq) is None, f"message {seq} came back"
    assert store.state().msgs == len(present)


def kill_and_reopen(store: FileStore, directory: Path) -> FileStore:
    """Drop the store as a killed process would (no sync, no snapshot)."""
    store._closed = True
    store._release_fds()
    return FileStore(directory, block_size=BLOCK)


@pytest.mark.asyncio
@pytest.mark.parametrize("sync_always", [False, True])
async def test_rewrite_runs_on_the_disk_thread_and_keeps_every_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_always: bool
) -> None:
    """A subject purge leaves two thirds of every finished block dead: each is
    rewritten on the disk thread while the loop keeps turning (stall measured
    printed); deletes, erases and reads land while a rewrite is in
    flight; everything reads back right, after the swap and after a kill."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rnd = random.Random(seed)
    clock = LoopClock(asyncio.get_running_loop())
    directory = tmp_path / "s"
    store = FileStore(directory, block_size=BLOCK, sync_always=sync_always, offload=clock.run_off_loop)
    present: dict[int, str] = {}
    for i in range(1, 751):
        subject = "keep" if i % 3 == 0 else "drop"
        assert store.store(subject, None, payload(i), i) == i
        present[i] = subject
    store.sync()
    before = sum(p.stat().st_size for p in (directory / "msgs").glob("*.blk"))
    slow = SlowFsync(FSYNC_S)
    monkeypatch.setattr(os, "fsync", slow)
    meter = LagMeter()
    meter.start()
    try:
        store.purge(subject="drop")
        gone = {seq for seq, subject in present.items() if subject == "drop"}
        present = {seq: s for seq, s in present.items() if s == "keep"}
        assert store.compactor.in_flight is not None, "no compaction started"
        # while a rewrite is being written: deletes (some erased) of messages in
        # that very block, and reads of everything
        await until(lambda: store.compactor.in_flight is not None and store.compactor.in_flight.writing)
        op = store.compactor.in_flight
        assert op is not None
        lo, hi = op.blk.first_seq, store._firsts[store._blocks.index(op.blk) + 1]
        in_block = [seq for seq in present if lo <= seq < hi]
        victims = rnd.sample(in_block, 6)
        for n, seq in enumerate(victims):
            assert store.remove(seq, erase=n % 2 == 0)
            del present[seq]
            gone.add(seq)
        erased = victims[0::2]
        check_contents(store, present, gone)
        await until(lambda: store.compactor.in_flight is None and not store.compactor.waiting)
    finally:
        lag = await meter.stop()
        monkeypatch.undo()
    print(f"loop stall while compacting: {lag * 1000:.1f} ms")
    threads = slow.threads
    assert threads and all(t.startswith("jetstream-disk") for t in threads), threads
    assert any(call.is_dir for call in slow.calls), "the renames were never made durable"
    check_contents(store, present, gone)
    after = sum(p.stat().st_size for p in (directory / "msgs").glob("*.blk"))
    assert after < before * 0.6, (before, after)
    on_disk = block_bytes(directory)
    for seq in erased:
        assert payload(seq) not in on_disk, f"erased message {seq} is still on disk"
    store = kill_and_reopen(store, directory)
    check_contents(store, present, gone)
    assert not list((directory / "msgs").glob("*.tmp"))
    store.close()
    store = FileStore(directory, block_size=BLOCK)
    check_contents(store, present, gone)
    store.close()
    clock.shutdown()


@pytest.mark.asyncio
async def test_retire_unlinks_on_the_disk_thread_after_the_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With sync_always, a block whose messages are all gone is retired on the
    disk thread: the current block (with the tombstones kept from it) is
    fsynced, the file unlinked, the directory fsynced, then the store forgets
    the block; the loop keeps turning meanwhile."""
    clock = LoopClock(asyncio.get_running_loop())
    directory = tmp_path / "s"
    store = FileStore(directory, block_size=BLOCK, sync_always=True, offload=clock.run_off_loop)
    present: dict[int, str] = {}
    for i in range(1, 1001):
        subject = "mid" if 240 <= i < 760 else "edge"
        store.store(subject, None, payload(i), i)
        present[i] = subject
        if i == 400:  # tombstones in a 'mid' block for records of the first block
            for seq in (10, 20, 30):
                assert store.remove(seq)
                del present[seq]
    store.sync()
    blocks = [b.path for b in store._blocks]
    mid = [b for b in store._blocks[1:-1] if all(
        present[s] == "mid" for s in range(b.first_seq, store._firsts[store._blocks.index(b) + 1])
    )]
    assert mid, "no block holds only 'mid' messages"
    unlinked: list[str] = []
    real_unlink = Path.unlink

    def recording_unlink(self: Path, missing_ok: bool = False) -> None:
        unlinked.append(threading.current_thread().name)
        real_unlink(self, missing_ok=missing_ok)

    slow = SlowFsync(FSYNC_S)
    monkeypatch.setattr(os, "fsync", slow)
    monkeypatch.setattr(Path, "unlink", recording_unlink)
    meter = LagMeter()
    meter.start()
    try:
        store.purge(subject="mid")
        await until(lambda: store.compactor.in_flight is None and not store.compactor.waiting)
    finally:
        lag = await meter.stop()
        monkeypatch.undo()
    print(f"loop stall while retiring: {lag * 1000:.1f} ms")
    assert unlinked and all(t.startswith("jetstream-disk") for t in unlinked), unlinked
    assert all(t.startswith("jetstream-disk") for t in slow.threads), slow.calls
    # fsync of the current block (the tombstones for 10, 20, 30 kept from the
    # retired block) before the unlink, the directory after it
    assert not slow.calls[0].is_dir and slow.calls[-1].is_dir, slow.calls
    for blk in mid:
        assert not blk.path.exists() and blk not in store._blocks
    assert len(list((directory / "msgs").glob("*.blk"))) < len(blocks)
    gone = {s for s, subj in present.items() if subj == "mid"} | {10, 20, 30}
    present = {s: subj for s, subj in present.items() if subj == "edge"}
    check_contents(store, present, gone)
    store = kill_and_reopen(store, directory)
    check_contents(store, present, gone)
    store.close()
    clock.shutdown()


def test_without_a_disk_thread_compaction_is_done_before_the_call_returns(tmp_path: Path) -> None:
    """No offload (unit tests, tools): the same steps run inline."""
    store: Any = FileStore(tmp_path / "s", block_size=BLOCK)
    for i in range(1, 1201):
        store.store("keep" if i % 3 == 0 else "drop", None, payload(i), i)
    before = sum(b.size for b in store._blocks)
    store.purge(subject="drop")
    assert store.compactor.in_flight is None and not store.compactor.waiting
    assert sum(b.size for b in store._blocks) < before * 0.6
    for i in range(3, 1201, 3):
        assert store.load(i).data == payload(i)
    store.close()


class StepOffload:
    """An offload the test steps through: jobs wait in a queue until `step()`."""

    def __init__(self) -> None:
        self.queue: list[tuple[Callable[[], Any], Callable[[Any], None]]] = []

    def __call__(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        self.queue.append((job, done))

    def step(self) -> bool:
        if not self.queue:
            return False
        job, done = self.queue.pop(0)
        try:
            result = job()
        except Exception as exc:
            result = exc
        done(result)
        return True


class CountingOffload:
    """An offload that counts the jobs handed over and the answers back: idle
    when every job's `done` ran (and started no other job)."""

    def __init__(self, offload: Callable[[Callable[[], Any], Callable[[Any], None]], None]) -> None:
        self.offload = offload
        self.submitted = self.answered = 0

    def __call__(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        self.submitted += 1

        def answered(result: Any) -> None:
            self.answered += 1
            done(result)

        self.offload(job, answered)

    @property
    def idle(self) -> bool:
        return self.answered == self.submitted


def test_removals_between_every_step_of_a_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk thread's jobs stepped by hand, the choice of records in turns
    of 10: between every two steps a message of the block being compacted is
    deleted (every other one erased). Nothing removed comes back, nothing
    else goes, erased payloads leave the disk, after the swap and after a kill."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rnd = random.Random(seed)
    monkeypatch.setattr(compactor_module, "PLAN_BATCH", 10)
    offload = StepOffload()
    directory = tmp_path / "s"
    store = FileStore(directory, block_size=64 * 1024, offload=offload)
    present: dict[int, str] = {}
    for i in range(1, 601):
        present[i] = "keep" if i % 3 == 0 else "drop"
        store.store(present[i], None, payload(i), i)
    store.purge(subject="drop")
    tombstones_from = store._blocks[-1].first_seq  # the deletes' tombstones go from here on
    gone = {seq for seq, subject in present.items() if subject == "drop"}
    present = {seq: s for seq, s in present.items() if s == "keep"}
    erased: list[int] = []
    steps = turns = 0
    while offload.step():
        steps += 1
        op = store.compactor.in_flight
        if op is None:
            continue
        turns += 0 < op.planned < len(op.records)
        i = store._blocks.index(op.blk)
        in_block = [s for s in present if op.blk.first_seq <= s < store._firsts[i + 1]]
        if not in_block:
            continue
        victim = rnd.choice(in_block)
        erase = steps % 2 == 0
        assert store.remove(victim, erase=erase)
        del present[victim]
        gone.add(victim)
        if erase:
            erased.append(victim)
        check_contents(store, present, gone)
    assert store.compactor.in_flight is None and turns > 0, (store.compactor.in_flight, turns)
    check_contents(store, present, gone)
    # the blocks holding those tombstones finished and emptied: compacted in
    # turn, they keep exactly the tombstones still hiding a record
    for i in range(601, 701):
        store.store("filler", None, payload(i), i)
        present[i] = "filler"
    for seq in [s for s in present if tombstones_from <= s <= 600]:
        assert store.remove(seq)
        del present[seq]
        gone.add(seq)
    while offload.step():
        pass
    check_contents(store, present, gone)
    on_disk = block_bytes(directory)
    for seq in erased:
        assert payload(seq) not in on_disk, f"erased message {seq} is still on disk"
    store = kill_and_reopen(store, directory)
    check_contents(store, present, gone)
    store.close()


@pytest.mark.asyncio
async def test_close_waits_for_a_rewrite_being_written_and_starts_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`close` while a rewrite is on the disk thread: it waits for it, swaps it
    in, writes a snapshot that matches the files, and leaves the other blocks
    that wanted compacting alone (nothing touches the directory after close)."""
    clock = LoopClock(asyncio.get_running_loop())
    offload = CountingOffload(clock.run_off_loop)
    directory = tmp_path / "s"
    store = FileStore(directory, block_size=BLOCK, offload=offload)
    present: dict[int, str] = {}
    for i in range(1, 751):
        present[i] = "keep" if i % 3 == 0 else "drop"
        store.store(present[i], None, payload(i), i)
    store.sync()
    monkeypatch.setattr(os, "fsync", SlowFsync(0.2))
    store.purge(subject="drop")
    await until(lambda: store.compactor.in_flight is not None and store.compactor.in_flight.writing)
    assert store.compactor.waiting, "only one block wanted compacting"
    store.close()
    monkeypatch.undo()
    # the disk thread's answers to what was in flight (and to anything they start)
    await until(lambda: offload.idle, 10, "every disk job's answer")
    clock.shutdown()  # every job submitted has run: nothing else may have been
    gone = {seq for seq, subject in present.items() if subject == "drop"}
    present = {seq: s for seq, s in present.items() if s == "keep"}
    store = FileStore(directory, block_size=BLOCK)
    assert store.recovery.used_snapshot, store.recovery.notes
    check_contents(store, present, gone)
    store.close()
