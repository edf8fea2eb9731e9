"""Child process of the compaction crash test (tests/server/integration/
test_store_compaction_crash.py): `python compaction_child.py DIR JOURNAL SEED SYNC`.

A `FileStore` with tiny blocks on the server's `LoopClock` (its disk thread
does the compactions) takes stores, deletes (some erased) and subject purges
in small bursts until killed, so rewrites and retirements are always in
flight. Every operation is written to the journal, one `os.write` a line:
`? D seq` / `? P subject` before a removal, then what returned: `S seq
subject`, `D seq`, `P seq,seq,...`; `C n` when a compaction of block n is
seen in flight, `c` when none is. A line without its newline was cut by the
kill. fsync is slowed a little to widen the windows a kill can land in.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time

from jetstream_server.app.loop_clock import LoopClock
from jetstream_server.store import file as file_store
from jetstream_server.store.file import FileStore

BLOCK = 8192
SUBJECTS = [f"k.{i}" for i in range(6)]
MAX_RUN_S = 60.0  # stops by itself if the parent never kills it


def payload(seq: int) -> bytes:
    return b"<%08d>" % seq * 20


async def run(directory: str, journal: str, seed: int, sync_always: bool) -> None:
    rnd = random.Random(seed)
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.002)
        real_fsync(fd)

    os.fsync = slow_fsync
    file_store.PLAN_BATCH = 8  # records are chosen over several turns, removals in between
    clock = LoopClock(asyncio.get_running_loop())
    store = FileStore(directory, block_size=BLOCK, sync_always=sync_always, offload=clock.run_off_loop)
    jfd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def note(line: str) -> None:
        os.write(jfd, line.encode() + b"\n")

    present: dict[int, str] = {}
    seq = store.state().first_seq
    while (msg := store.load_next(seq)) is not None:
        present[msg.seq] = msg.subject
        seq = msg.seq + 1
    seen_op: object = None
    deadline = time.monotonic() + MAX_RUN_S
    while time.monotonic() < deadline:
        roll = rnd.random()
        if roll < 0.5 or len(present) < 50:
            for _ in range(rnd.randint(1, 12)):
                subject = rnd.choice(SUBJECTS)
                nxt = store.state().last_seq + 1
                stored = store.store(subject, None, payload(nxt), time.time_ns())
                present[stored] = subject
                note(f"S {stored} {subject}")
        elif roll < 0.9:
            for _ in range(rnd.randint(1, 6)):
                victim = rnd.choice(list(present))
                note(f"? D {victim}")
                store.remove(victim, erase=rnd.random() < 0.5)
                del present[victim]
                note(f"D {victim}")
        else:
            subject = rnd.choice(SUBJECTS)
            keep = rnd.choice([0, 1, 3])
            note(f"? P {subject}")
            purged = store.purge_seqs(subject, keep=keep or None)
            gone = list(purged.seqs or ())
            for s in gone:
                present.pop(s, None)
            note("P " + ",".join(map(str, gone)))
        if sync_always:  # the engine's group commit: the fsyncs on the same disk thread
            job = store.begin_sync()
            if job is not None:
                clock.run_off_loop(job, lambda _result: None)
        op = store.compactor.in_flight
        if op is not None and op is not seen_op:
            note(f"C {op.blk.number}")
        elif op is None and seen_op is not None:
            note("c")
        seen_op = op
        # between bursts the disk thread gets the interpreter and its answers come in
        await asyncio.sleep(0.001)
    store.close()
    clock.shutdown()


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"))
