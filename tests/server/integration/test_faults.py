"""Storage faults with stop conditions: kill -9 under load, a full disk, damaged files.

- kill -9 under sustained load: four publishers with pipelined acks, two
  durable pull consumers acking (acks as requests), the server killed while
  all of that is in flight, restarted, repeated `JS_CRASH_ROUNDS` times
  (default 10 for the bundled server, 3 for nats-server, whose kill behaviour
  the test is checked against; `JS_CRASH_SECONDS` of load per round, default
  0.8). Each round's seed is printed; `JS_CRASH_SEED` replays one. After every
  restart: every acknowledged message is present exactly once and in publish
  order; on the bundled server each durable's ack floor is also at or after
  every ack it confirmed and no confirmed ack is ever redelivered (nats-server
  writes consumer state behind its ack replies: after a kill -9 its floor can
  be below acks it confirmed, seen here with seed 896783, so for it only the
  messages are checked).
- a full disk: the store directory on a small tmpfs mounted for the test
  (needs root or CAP_SYS_ADMIN; skipped otherwise, with the reason), filled
  by a ballast file: publishers get an error, acks are not confirmed, a
  durable create fails without leaving anything, reads go on; once the
  ballast goes, everything works again and a kill -9 + restart loses nothing
  that was confirmed. Bundled server only (nats-server reacts to a full disk
  by disabling JetStream, a different contract).
- damaged files: a record corrupted mid-block, a truncated block, a missing
  index snapshot, a damaged meta.json: the server starts, keeps everything it
  can and logs exactly what it dropped (stream info `lost`).

A longer kill run: `JS_CRASH_ROUNDS=100 JS_CRASH_SECONDS=2 pytest -m crash
tests/server/integration/test_faults.py -k kill -s`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import json
import os
import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import pytest
from js_helpers import api, create, info
from nats.errors import Error as NatsError
from sink_helpers import read_all

from jetstream_testing.process import ServerProcess, start_server

pytestmark = [pytest.mark.asyncio, pytest.mark.crash]

STREAM = "K"
PUBLISHERS = 4
DURABLES = ("C1", "C2")


def _rounds(kind: str) -> int:
    default = "10" if kind == "bundled" else "3"
    return int(os.environ.get("JS_CRASH_ROUNDS", default))


async def _connect(url: str) -> nats.NATS:
    return await nats.connect(url, allow_reconnect=False, connect_timeout=5)


@dataclass
class Ledger:
    """What the server confirmed, across all rounds."""

    acked: dict[int, bytes] = field(default_factory=dict)  # stream seq -> payload
    order: dict[int, list[int]] = field(default_factory=dict)  # publisher -> seqs, in publish order
    confirmed: dict[str, set[int]] = field(default_factory=dict)  # durable -> acked seqs
    violations: list[str] = field(default_factory=list)
    published = 0


async def _publisher(
    js: Any, ledger: Ledger, pid: int, rnd: int, rng: random.Random, stop: asyncio.Event
) -> None:
    i = 0
    while not stop.is_set():
        burst = []
        for _ in range(rng.randint(1, 40)):
            payload = b"p%d-r%d-%d" % (pid, rnd, i)
            i += 1
            burst.append((payload, await js.publish_async(f"k.{pid}", payload)))
        for payload, future in burst:
            try:
                ack = await future
            except (NatsError, asyncio.TimeoutError):
                continue
            ledger.acked[ack.seq] = payload
            ledger.order.setdefault(pid, []).append(ack.seq)
            ledger.published += 1
        await asyncio.sleep(0)


async def _consumer(
    js: Any, ledger: Ledger, durable: str, rng: random.Random, strict: bool, stop: asyncio.Event
) -> None:
    psub = await js.pull_subscribe(f"{STREAM.lower()}.>", durable=durable, stream=STREAM)
    confirmed = ledger.confirmed.setdefault(durable, set())
    while not stop.is_set():
        try:
            msgs = await psub.fetch(rng.randint(1, 50), timeout=0.3)
        except (NatsError, asyncio.TimeoutError):
            continue
        for msg in msgs:
            seq = msg.metadata.sequence.stream
            if strict and seq in confirmed:
                ledger.violations.append(f"{durable}: confirmed ack of {seq} redelivered")
            try:
                await msg.ack_sync(timeout=2)
            except (NatsError, asyncio.TimeoutError):
                break  # not confirmed: it may come again
            confirmed.add(seq)


async def _load_round(url: str, ledger: Ledger, rnd: int, seed: int, seconds: float,
                      server: ServerProcess, strict: bool) -> None:
    rng = random.Random(seed)
    nc = await _connect(url)
    js = nc.jetstream(publish_async_max_pending=4000)
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(_publisher(js, ledger, pid, rnd, random.Random(rng.random()), stop))
        for pid in range(PUBLISHERS)
    ]
    tasks += [
        asyncio.create_task(_consumer(js, ledger, d, random.Random(rng.random()), strict, stop))
        for d in DURABLES
    ]
    await asyncio.sleep(rng.uniform(seconds / 2, seconds))
    for task in tasks:  # nothing of ours must have died before the kill
        if task.done() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    server.kill()  # while publishes, deliveries and acks are in flight
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
    with contextlib.suppress(Exception):
        await nc.close()


async def _read_all(url: str) -> dict[int, bytes]:
    """Every stored message by sequence, through a push consumer (sink_helpers.read_all: the
    lean client reads 100,000 messages in a fraction of the time nats-py's fetch takes, and the
    store grows every round); a sequence delivered twice fails."""
    found: dict[int, bytes] = {}
    for msg in await asyncio.to_thread(read_all, url, STREAM):
        assert msg.seq not in found, f"sequence {msg.seq} delivered twice"
        found[msg.seq] = msg.data
    return found


async def _check(
    url: str, ledger: Ledger, rnd: int, seed: int, strict: bool
) -> tuple[int, dict[str, int]]:
    nc = await _connect(url)
    try:
        stored = await _read_all(url)
        missing = [s for s, p in ledger.acked.items() if stored.get(s) != p]
        assert not missing, f"round {rnd} seed {seed}: acknowledged messages lost: {missing[:10]}"
        payloads = list(stored.values())
        assert len(payloads) == len(set(payloads)), f"round {rnd} seed {seed}: a message twice"
        for pid, seqs in ledger.order.items():
            assert seqs == sorted(seqs), f"publisher {pid} out of order"
        floors = {}
        for durable in DURABLES:
            ci = await api(nc, f"CONSUMER.INFO.{STREAM}.{durable}")
            floor = ci["ack_floor"]["stream_seq"]
            floors[durable] = floor
            confirmed = ledger.confirmed.get(durable, set())
            # every sequence below the first one never confirmed must be at or below the floor
            expect = 0
            while expect + 1 in confirmed:
                expect += 1
            assert floor >= expect or not strict, (
                f"round {rnd} seed {seed}: {durable} ack floor {floor} below its confirmed "
                f"acks (all up to {expect})"
            )
        return len(stored), floors
    finally:
        await nc.close()


async def test_kill_9_under_load(server_kind: str, store_dir: Path) -> None:
    rounds = _rounds(server_kind)
    seconds = float(os.environ.get("JS_CRASH_SECONDS", "0.8"))
    base = int(os.environ.get("JS_CRASH_SEED", time.time_ns() % 1_000_000))
    strict = server_kind == "bundled"
    srv = start_server(server_kind, store_dir)
    ledger = Ledger()
    try:
        nc = await _connect(srv.url)
        await create(nc, name=STREAM, subjects=["k.>"])
        for durable in DURABLES:
            resp = await api(nc, f"CONSUMER.CREATE.{STREAM}.{durable}", {
                "stream_name": STREAM,
                "config": {"durable_name": durable, "ack_policy": "explicit",
                           "ack_wait": 2_000_000_000, "max_ack_pending": -1},
            })
            assert "error" not in resp, resp
        await nc.close()
        checked = 0
        for rnd in range(rounds):
            seed = base + rnd
            print(f"kill round {rnd} seed {seed}")
            await _load_round(srv.url, ledger, rnd, seed, seconds, srv, strict)
            srv.restart()
            checked, floors = await _check(srv.url, ledger, rnd, seed, strict)
            print(f"  after restart: {checked} messages checked, {len(ledger.acked)} acknowledged, "
                  f"ack floors {floors}")
        assert ledger.published > rounds * 50, "too little load to mean anything"
        assert all(ledger.confirmed.get(d) for d in DURABLES), "the consumers acked nothing"
        assert not ledger.violations, ledger.violations[:10]
        print(f"{server_kind}: {rounds} kills survived, {checked} messages checked, "
              f"{sum(len(c) for c in ledger.confirmed.values())} confirmed acks kept")
    finally:
        srv.stop()


async def test_kill_9_right_after_stream_creates(server_kind: str, store_dir: Path) -> None:
    """A stream create does not fsync (as nats-server, without sync_always): what it
    wrote is the OS's, so a create that was answered survives a kill -9 that comes
    right after it, with more creates in flight."""
    base = int(os.environ.get("JS_CRASH_SEED", time.time_ns() % 1_000_000))
    srv = start_server(server_kind, store_dir)
    answered: dict[str, list[str]] = {}
    try:
        for rnd in range(3):
            rng = random.Random(base + rnd)
            print(f"create-kill round {rnd} seed {base + rnd}")
            nc = await _connect(srv.url)
            for i in range(rng.randrange(5, 40)):
                name = f"R{rnd}_{i}"
                await create(nc, name=name, subjects=[f"r{rnd}.{i}.>"], storage="file")
                answered[name] = [f"r{rnd}.{i}.>"]
            for i in range(rng.randrange(0, 10)):  # in flight when the kill comes
                await nc.publish(f"$JS.API.STREAM.CREATE.X{rnd}_{i}", json.dumps(
                    {"name": f"X{rnd}_{i}", "subjects": [f"x{rnd}.{i}"], "storage": "file"}).encode())
            await nc.flush()
            srv.kill()
            await nc.close()
            srv.restart()
            nc = await _connect(srv.url)
            names = (await api(nc, "STREAM.NAMES"))["streams"] or []
            missing = sorted(set(answered) - set(names))
            assert not missing, f"seed {base + rnd}: answered creates lost: {missing}"
            for name in rng.sample(sorted(answered), 5):
                assert (await info(nc, name=name))["config"]["subjects"] == answered[name]
            await nc.close()
    finally:
        srv.stop()


# -- a full disk ----------------------------------------------------------------------------
@pytest.fixture
def small_fs(tmp_path: Path) -> Any:
    """A 16 MiB tmpfs mounted for the test (a real ENOSPC), unmounted after."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): needs root")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(path: Path) -> None:
    """Write a ballast file until the file system is full (64 KiB, then 512 bytes
    at a time, so the last free pages go too)."""
    with open(path, "wb", buffering=0) as fh:
        for size in (65536, 512):
            chunk = bytes(size)
            while True:
                try:
                    fh.write(chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break


async def test_disk_full_during_publishing_and_acks(small_fs: Path) -> None:
    store = small_fs / "store"
    srv = start_server("bundled", store)
    try:
        nc = await _connect(srv.url)
        js = nc.jetstream()
        await create(nc, name="F", subjects=["f"])
        resp = await api(nc, "CONSUMER.CREATE.F.D", {"stream_name": "F", "config": {
            "durable_name": "D", "ack_policy": "explicit", "max_ack_pending": -1}})
        assert "error" not in resp, resp
        acked: dict[int, bytes] = {}
        for i in range(200):
            payload = b"before-%d-" % i + b"x" * 1000
            acked[(await js.publish("f", payload)).seq] = payload
        psub = await js.pull_subscribe("f", durable="D", stream="F")
        first = await psub.fetch(100, timeout=2)
        for msg in first[:50]:
            await msg.ack_sync(timeout=2)
        confirmed = {m.metadata.sequence.stream for m in first[:50]}

        ballast = small_fs / "ballast"
        _fill(ballast)
        # publishing on a full disk: an error ack, never a false confirmation
        errors = 0
        for i in range(50):
            payload = b"full-%d-" % i + b"x" * 1000
            reply = await nc.request("f", payload, timeout=5)
            body = reply.data
            if b'"error"' in body:
                errors += 1
                assert b"10077" in body and b"no space left" in body.lower(), body
            else:
                seq = int(body.split(b'"seq":')[1].split(b"}")[0].split(b",")[0])
                acked[seq] = payload
        assert errors >= 45, f"only {errors} of 50 publishes on a full disk were refused"
        print(f"disk full: {errors} of 50 publishes refused, {50 - errors} stored and acked")
        # acks as requests: unconfirmed once the state cannot be written
        unconfirmed = 0
        for msg in first[50:]:
            try:
                await msg.ack_sync(timeout=0.5)
                confirmed.add(msg.metadata.sequence.stream)
            except (NatsError, asyncio.TimeoutError):
                unconfirmed += 1
                if unconfirmed == 3:
                    break
        assert unconfirmed == 3, "acks were confirmed on a full disk"
        # a durable create fails and leaves nothing
        resp = await api(nc, "CONSUMER.CREATE.F.NEW", {"stream_name": "F", "config": {
            "durable_name": "NEW", "ack_policy": "explicit"}})
        assert resp.get("error", {}).get("err_code") == 10012, resp
        names = (await api(nc, "CONSUMER.NAMES.F"))["consumers"]
        assert names == ["D"], names
        # reads go on
        for seq in list(acked)[:20]:
            msg = (await api(nc, "STREAM.MSG.GET.F", {"seq": seq}))["message"]
            assert base64.b64decode(msg["data"]) == acked[seq]
        # space is back: everything works again
        ballast.unlink()
        for i in range(20):
            payload = b"after-%d" % i
            acked[(await js.publish("f", payload)).seq] = payload
        more = await psub.fetch(10, timeout=2)
        for msg in more:
            await msg.ack_sync(timeout=2)
            confirmed.add(msg.metadata.sequence.stream)
        await nc.close()
        assert not list(store.rglob("*.tmp")), list(store.rglob("*.tmp"))
        srv.kill()
        srv.restart()
        nc = await _connect(srv.url)
        for seq, payload in acked.items():
            msg = (await api(nc, "STREAM.MSG.GET.F", {"seq": seq}))["message"]
            assert base64.b64decode(msg["data"]) == payload, seq
        ci = await api(nc, "CONSUMER.INFO.F.D")
        floor = ci["ack_floor"]["stream_seq"]
        expect = 0
        while expect + 1 in confirmed:
            expect += 1
        assert floor >= expect, (floor, expect)
        assert (await api(nc, "CONSUMER.NAMES.F"))["consumers"] == ["D"]
        await nc.close()
    finally:
        srv.stop()


# -- damaged files ----------------------------------------------------------------------------
def _stream_dir(store: Path, name: str) -> Path:
    return store / "jetstream" / "$G" / "streams" / name


async def test_damaged_files_keep_everything_else(store_dir: Path) -> None:
    srv = start_server("bundled", store_dir)
    try:
        nc = await _connect(srv.url)
        for name in ("MID", "TAIL", "NOIDX", "META"):
            await create(nc, name=name, subjects=[name.lower()])
            for i in range(100):
                await nc.request(name.lower(), b"%s-%d" % (name.encode(), i), timeout=5)
        await nc.close()
    finally:
        srv.stop()  # a clean stop: every stream leaves its index snapshot
    for name in ("MID", "TAIL", "NOIDX"):
        assert (_stream_dir(store_dir, name) / "index.snap").exists()
    # MID: one byte of message 60's payload flipped (the snapshot no longer matches)
    blk = sorted((_stream_dir(store_dir, "MID") / "msgs").glob("*.blk"))[-1]
    raw = bytearray(blk.read_bytes())
    at = raw.index(b"MID-59")
    raw[at + 4] ^= 0x20
    blk.write_bytes(bytes(raw))
    # TAIL: the last record cut short
    blk = sorted((_stream_dir(store_dir, "TAIL") / "msgs").glob("*.blk"))[-1]
    os.truncate(blk, blk.stat().st_size - 3)
    # NOIDX: the index snapshot gone (the blocks are scanned instead)
    (_stream_dir(store_dir, "NOIDX") / "index.snap").unlink()
    # META: meta.json damaged
    (_stream_dir(store_dir, "META") / "meta.json").write_text('{"config": {"na')
    srv = start_server("bundled", store_dir)
    try:
        nc = await _connect(srv.url)
        mid = (await info(nc, "MID"))["state"]
        assert (mid["messages"], mid["last_seq"]) == (99, 100)
        assert mid["lost"]["msgs"] == [60] and mid["lost"]["bytes"] > 0
        got = (await api(nc, "STREAM.MSG.GET.MID", {"seq": 61}))["message"]
        assert base64.b64decode(got["data"]) == b"MID-60"
        tail = (await info(nc, "TAIL"))["state"]
        assert (tail["messages"], tail["last_seq"]) == (99, 99)
        assert tail["lost"]["msgs"] == [100]
        noidx = (await info(nc, "NOIDX"))["state"]
        assert (noidx["messages"], noidx["last_seq"]) == (100, 100) and "lost" not in noidx
        assert (await info(nc, "META"))["error"]["err_code"] == 10059
        resp = await api(nc, "STREAM.CREATE.META", {"name": "META", "subjects": ["meta"]})
        assert resp["error"]["err_code"] == 10049 and "meta.json unreadable" in str(resp)
        assert len(list((_stream_dir(store_dir, "META") / "msgs").glob("*.blk"))) == 1
        await nc.close()
        srv.wait_for_log(r"stream MID recovered 99 messages, dropped 1 messages", timeout=5)
        srv.wait_for_log(r"recovery lost message sequences 60$", timeout=5)
        srv.wait_for_log(r"stream TAIL recovered 99 messages, dropped 1 messages", timeout=5)
        srv.wait_for_log(r"recovery lost message sequences 100$", timeout=5)
        srv.wait_for_log(r"skipping stream directory .*META", timeout=5)
        assert not [line for line in srv.log if "NOIDX" in line and "dropped" in line]
    finally:
        srv.stop()
