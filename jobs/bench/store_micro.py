"""Store micro-benchmark, in process: `python -m jobs.benchmark --only store`
(or `python -m jobs.bench.store_micro [--msgs N] [--size B]`).

Measures, for both backends: store rate, sequential load rate, filtered
load_next/num_pending, and for the file store the reopen time after a clean
close (snapshot) and after an unclean stop (full scan), plus the index's
memory per message (tracemalloc). Prints one line per figure; not a test.
"""

from __future__ import annotations

import argparse
import gc
import logging
import tempfile
import time
import tracemalloc
from collections.abc import Callable

from jetstream_server.store.base import StreamStore
from jetstream_server.store.file import FileStore
from jetstream_server.store.memory import MemoryStore

log = logging.getLogger(__name__)
T0 = 1_700_000_000_000_000_000


def _timed(label: str, n: int, fn: Callable[[], object]) -> float:
    """Run `fn`; print wall and CPU seconds and the rate by CPU time (the
    machine may be shared, CPU time is the steadier figure)."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    rate = n / used if used else float("inf")
    print(f"{label:<40} wall {elapsed:7.3f} s  cpu {used:7.3f} s  {rate:>12,.0f} /s cpu")
    return elapsed


def _fill(store: StreamStore, n: int, payload: bytes, subjects: int) -> None:
    names = [f"bench.s{i}" for i in range(subjects)]
    put = store.store
    for i in range(n):
        put(names[i % subjects], None, payload, T0 + i)


def _read_all(store: StreamStore, n: int) -> None:
    for seq in range(1, n + 1):
        if store.load(seq) is None:
            raise AssertionError(f"missing {seq}")


def _filtered(store: StreamStore, subjects: int) -> None:
    seq, count = 1, 0
    while True:
        msg = store.load_next(seq, ["bench.s1"])
        if msg is None:
            break
        count += 1
        seq = msg.seq + 1
    store.num_pending(1 + store.state().last_seq // 2, ["bench.*"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--msgs", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--subjects", type=int, default=16)
    args = parser.parse_args(argv)
    n, payload = args.msgs, b"x" * args.size
    print(f"{n} messages of {args.size} bytes over {args.subjects} subjects")

    mem = MemoryStore()
    _timed("memory store()", n, lambda: _fill(mem, n, payload, args.subjects))
    _timed("memory load() sequential", n, lambda: _read_all(mem, n))
    _timed(
        "memory filtered load_next (1 subject)",
        n // args.subjects,
        lambda: _filtered(mem, args.subjects),
    )
    mem.destroy()

    with tempfile.TemporaryDirectory() as tmp:
        fs = FileStore(tmp)
        _timed("file store()", n, lambda: _fill(fs, n, payload, args.subjects))
        _timed("file sync()", 1, fs.sync)
        _timed("file load() sequential", n, lambda: _read_all(fs, n))
        _timed(
            "file filtered load_next (1 subject)",
            n // args.subjects,
            lambda: _filtered(fs, args.subjects),
        )
        _timed("file close() (writes snapshot)", 1, fs.close)
        holder: list[FileStore] = []
        _timed("file reopen with snapshot", n, lambda: holder.append(FileStore(tmp)))
        reopened = holder.pop()
        assert reopened.recovery.used_snapshot and reopened.state().msgs == n
        reopened.sync()
        # an unclean stop: release descriptors without writing a snapshot
        reopened._closed = True
        reopened._release_fds()
        _timed("file reopen by scan (no snapshot)", n, lambda: holder.append(FileStore(tmp)))
        scanned = holder.pop()
        assert not scanned.recovery.used_snapshot and scanned.state().msgs == n
        scanned.close()

        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        again = FileStore(tmp)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        print(f"{'file index memory per message':<42} {(after - before) / n:8.1f} bytes")
        again.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
