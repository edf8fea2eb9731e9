"""kill -9 while block compactions are in flight (store/compaction.py).

A child process (tests/support/compaction_child.py) runs a `FileStore` with
8 KiB blocks on the server's `LoopClock`: stores, deletes (some erased) and
subject purges in small bursts, so rewrites and retirements run on its disk
thread all the time, and journals every operation that returned. The child
is killed (SIGKILL) at a random point, the store reopened here and checked
against the journal: every journaled message is there with its payload,
every journaled removal stays removed, nothing else appears (but the one
operation the kill may have cut), no `.tmp` is left. Then the next round
starts on the same directory (recovery of what the last kill left,
compacted again). Seeds printed; `JS_CRASH_SEED` replays one,
`JS_COMPACTION_ROUNDS` sets the number of kills (default 6), alternating
`sync_always` off and on.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_process import kill_group, start_child

from jetstream_server.store.file import FileStore

pytestmark = pytest.mark.crash

CHILD = Path(__file__).resolve().parents[2] / "support" / "compaction_child.py"
BLOCK = 8192


def payload(seq: int) -> bytes:
    return b"<%08d>" % seq * 20


class Journal:
    """What the child's journal says, replayed over what the store held before."""

    def __init__(self, text: str, before: dict[int, str]) -> None:
        present = dict(before)
        intent: list[str] | None = None
        self.last_stored = max(before, default=0)
        self.compactions = 0
        self.in_flight = False
        for line in text.split("\n")[:-1]:  # the last piece has no newline: cut by the kill
            parts = line.split(" ")
            kind = parts[0]
            if kind == "?":
                intent = parts[1:]
            elif kind == "S":
                seq = int(parts[1])
                present[seq] = parts[2]
                self.last_stored = max(self.last_stored, seq)
            elif kind == "D":
                present.pop(int(parts[1]), None)
                intent = None
            elif kind == "P":
                for seq in filter(None, parts[1].split(",")):
                    present.pop(int(seq), None)
                intent = None
            elif kind == "C":
                self.compactions += 1
                self.in_flight = True
            elif kind == "c":
                self.in_flight = False
        uncertain: set[int] = set()
        if intent is not None:  # removal begun, not journaled as returned
            if intent[0] == "D":
                uncertain.add(int(intent[1]))
            else:
                uncertain.update(s for s, subject in present.items() if subject == intent[1])
        self.uncertain = uncertain
        self.certain = {s: subject for s, subject in present.items() if s not in uncertain}


def contents(store: FileStore) -> dict[int, str]:
    found: dict[int, str] = {}
    seq = store.state().first_seq
    while (msg := store.load_next(seq)) is not None:
        assert msg.data == payload(msg.seq), f"message {msg.seq} has another payload"
        found[msg.seq] = msg.subject
        seq = msg.seq + 1
    return found


def wait_for_lines(
    journal: Path, lines: int, child: subprocess.Popen[bytes], timeout_s: float = 20.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_bytes().count(b"\n") >= lines:
            return
        assert child.poll() is None, "the child died before the kill"
        time.sleep(0.01)
    raise AssertionError(f"the child journaled fewer than {lines} lines in {timeout_s} s")


def test_kill_9_while_compacting(tmp_path: Path) -> None:
    rounds = int(os.environ.get("JS_COMPACTION_ROUNDS", "6"))
    base = int(os.environ.get("JS_CRASH_SEED", random.randrange(1 << 30)))
    directory = tmp_path / "store"
    before: dict[int, str] = {}
    checked = compactions = kills_in_flight = 0
    for rnd_no in range(rounds):
        seed = base + rnd_no
        sync_always = rnd_no % 2 == 1
        print(f"round {rnd_no} seed {seed} sync_always {sync_always}")
        rnd = random.Random(seed)
        journal = tmp_path / f"journal-{rnd_no}"
        child = start_child(
            [sys.executable, str(CHILD), str(directory), str(journal), str(seed),
             "1" if sync_always else "0"],
            tmp_path / f"child-{rnd_no}.log",
        )
        try:
            wait_for_lines(journal, rnd.randint(150, 1500), child)
        finally:
            kill_group(child)
        log = (tmp_path / f"child-{rnd_no}.log").read_text()
        assert "Traceback" not in log, log
        facts = Journal(journal.read_text(), before)
        store = FileStore(directory, block_size=BLOCK)
        try:
            assert not list((directory / "msgs").glob("*.tmp"))
            found = contents(store)
        finally:
            store.close()
        for seq, subject in facts.certain.items():
            assert found.get(seq) == subject, f"seed {seed}: acknowledged message {seq} lost"
        for seq in found:
            assert seq in facts.certain or seq in facts.uncertain or seq > facts.last_stored, (
                f"seed {seed}: removed message {seq} came back"
            )
        checked += len(facts.certain)
        compactions += facts.compactions
        kills_in_flight += facts.in_flight
        before = found
    print(
        f"{rounds} kills, {compactions} compactions started, {kills_in_flight} kills with one "
        f"in flight, {checked} messages checked"
    )
    assert compactions > rounds, "the workload did not keep compactions going"
