"""The bytes a stored message counts for, per backend, as nats-server counts them:
file `22 + S + D + 8` (with headers `22 + S + 4 + H + D + 8`, filestore.go
fileStoreMsgSizeRaw), memory `S + H + D + 16` (memstore.go memStoreMsgSizeRaw),
S in UTF-8 bytes. The file store derives sizes from its records when it reopens
(from the index snapshot after a clean close, from the blocks after a crash), and
reads a record back from its size: both must give the same numbers and payloads."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from jetstream_server.store import StreamStore
from jetstream_server.store.cache import CHUNK_SIZE
from jetstream_server.store.file import MIN_BLOCK_SIZE, FileStore
from jetstream_server.store.memory import MemoryStore

T0 = 1_700_000_000_000_000_000
Msg = tuple[str, bytes | None, bytes]


def file_size(subject: str, hdr: bytes | None, data: bytes) -> int:
    slen = len(subject.encode())
    if not hdr:
        return 22 + slen + len(data) + 8
    return 22 + slen + 4 + len(hdr) + len(data) + 8


def memory_size(subject: str, hdr: bytes | None, data: bytes) -> int:
    return len(subject.encode()) + len(hdr or b"") + len(data) + 16


def messages(seed: int) -> list[Msg]:
    """Headers or not (odd sequences have them), ASCII and UTF-8 subjects, empty
    to larger-than-a-chunk payloads (sequences 18 and 41); the last one, with
    headers, ends the last block."""
    rnd = random.Random(seed)
    out: list[Msg] = []
    for i in range(60):
        subject = rnd.choice(("a", "orders.new", "prix.€", "日本.x"))
        hdr = f"NATS/1.0\r\nK: {'v' * rnd.randint(0, 40)}\r\n\r\n".encode() if i % 2 else None
        size = CHUNK_SIZE + 3 if i in (17, 40) else rnd.choice((0, 1, 5, 100, 700))
        out.append((subject, hdr, rnd.randbytes(size)))
    return out


def fill(store: StreamStore, msgs: list[Msg]) -> None:
    for i, (subject, hdr, data) in enumerate(msgs):
        assert store.store(subject, hdr, data, T0 + i) == i + 1


def check(store: StreamStore, msgs: dict[int, Msg]) -> None:
    sizer = file_size if isinstance(store, FileStore) else memory_size
    assert store.state().bytes == sum(sizer(*m) for m in msgs.values())
    assert store.state().msgs == len(msgs)
    assert store.msg_size(*next(iter(msgs.values()))) == sizer(*next(iter(msgs.values())))
    for seq, (subject, hdr, data) in msgs.items():
        got = store.load(seq)
        assert got is not None
        assert (got.subject, got.headers, got.data) == (subject, hdr, data), seq


@pytest.mark.parametrize("seed", [1, 2])
def test_file_store_counts_as_nats_server_across_reopen(tmp_path: Path, seed: int) -> None:
    print(f"seed {seed}")
    msgs = messages(seed)
    store = FileStore(tmp_path, block_size=MIN_BLOCK_SIZE, sync_always=False)
    fill(store, msgs)
    live = dict(enumerate(msgs, start=1))
    check(store, live)
    for seq in (3, 4, 41):  # headers, none (erased), large
        assert store.remove(seq, erase=seq == 4)
        del live[seq]
    check(store, live)
    store.close()
    again = FileStore(tmp_path, block_size=MIN_BLOCK_SIZE, sync_always=False)
    assert again.recovery.used_snapshot
    check(again, live)
    assert again.purge(subject="a") == sum(1 for m in live.values() if m[0] == "a")
    live = {seq: m for seq, m in live.items() if m[0] != "a"}
    check(again, live)
    # a killed process: no snapshot, the sizes come from the records
    again._closed = True
    again._release_fds()
    scanned = FileStore(tmp_path, block_size=MIN_BLOCK_SIZE, sync_always=False)
    assert not scanned.recovery.used_snapshot and scanned.recovery.lost_msgs == 0
    check(scanned, live)
    scanned.purge()
    assert scanned.state().bytes == 0
    scanned.close()


def test_memory_store_counts_as_nats_server() -> None:
    msgs = messages(3)
    store = MemoryStore()
    fill(store, msgs)
    live = dict(enumerate(msgs, start=1))
    check(store, live)
    assert store.remove(2) and store.remove(5)
    del live[2], live[5]
    check(store, live)
