"""The `dashboard` family: what one refresh of the dashboard costs with thousands of streams.

    python -m jobs.benchmark --only dashboard            # 5,000 streams
    python -m jobs.benchmark --only dashboard --quick    # 200 streams, no idle waits

On each server (bundled, nats-server, each in its own process) it creates `streams`
streams (every tenth with a message and a durable consumer), then refreshes the page's
data the way `jetstream dashboard` does (the CLI's `Collector`, in this process) at
`PAGES` different offsets, so that no refresh is served from the one-second cache:
the JetStream API requests of one refresh and its time. On the bundled server it also
reads its own page's data.json at the same offsets, a second apart (the time each took,
`cost.took_ms`, given back to the loop every 5 ms), and the largest event-loop lag of
`/varz`'s 10-second window twice: over 10 idle seconds (the server's own background
work), and over the 10 seconds with those refreshes.

Creating 5,000 streams on the bundled server takes minutes (each creation checks the
new subjects against every stream): this family runs only when named.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats

from jetstream_cli.connection import ConnectionOptions
from jetstream_cli.dashboard.collect import Collector, Query
from jobs.bench.results import Measure
from jobs.bench.servers import KINDS, running

FULL_STREAMS = 5_000
QUICK_STREAMS = 200
PAGES = 5
IDLE_S = 11.0  # /varz's recent lag covers the last 10 s


async def _create(url: str, streams: int, say: Callable[[str], None]) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream(timeout=60)
        slots = asyncio.Semaphore(16)
        done = 0

        async def one(i: int) -> None:
            nonlocal done
            async with slots:
                await js.add_stream(name=f"D{i:05d}", subjects=[f"d{i}.>"])
                if i % 10 == 0:
                    await js.publish(f"d{i}.x", b"x")
                    await js.add_consumer(f"D{i:05d}", durable_name="c", ack_policy="explicit")
                done += 1
                if done % 1000 == 0:
                    say(f"  {done:,} streams")

        await asyncio.gather(*(one(i) for i in range(streams)))
    finally:
        await nc.close()


def _offsets(streams: int) -> list[int]:
    return [round(i * (streams - 20) / (PAGES - 1)) for i in range(PAGES)]


async def _cli_refreshes(url: str, streams: int) -> list[dict[str, Any]]:
    collector = Collector(ConnectionOptions(servers=url))
    await collector.connect()
    try:
        return [(await collector.snapshot(Query(offset=o)))["cost"] for o in _offsets(streams)]
    finally:
        await collector.close()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


def run(root: Path, quick: bool, say: Callable[[str], None]) -> list[Measure]:
    streams = QUICK_STREAMS if quick else FULL_STREAMS
    idle_s = 0.0 if quick else IDLE_S  # --quick only shows the job works: no lag windows
    out: list[Measure] = []
    for kind in KINDS:
        with running(kind, root, name="dashboard", http_port=-1 if kind == "bundled" else None) as proc:
            say(f"dashboard: creating {streams:,} streams on {kind}")
            asyncio.run(_create(proc.url, streams, say))
            if kind == "bundled":
                base = f"http://127.0.0.1:{proc.monitor_port}"
                time.sleep(idle_s)
                idle = _get(f"{base}/varz")["event_loop"]["recent_max_lag_ms"]
                time.sleep(idle_s)
                took = []
                for o in _offsets(streams):
                    took.append(_get(f"{base}/dashboard/data.json?offset={o}")["cost"]["took_ms"])
                    time.sleep(1.0 if idle_s else 0.0)  # as a page would (each offset misses the cache)
                during = _get(f"{base}/varz")["event_loop"]["recent_max_lag_ms"]
                workload = f"data.json of the monitoring port, {streams:,} streams"
                out += [Measure("dashboard", workload, "ms (median)", kind, statistics.median(took)),
                        Measure("dashboard", workload, "ms (max)", kind, max(took)),
                        Measure("dashboard", "largest event-loop lag, 10 s idle", "ms", kind, idle),
                        Measure("dashboard", f"largest event-loop lag, 10 s with {PAGES} refreshes",
                                "ms", kind, during)]
            costs = asyncio.run(_cli_refreshes(proc.url, streams))
            workload = f"jetstream dashboard refresh, {streams:,} streams"
            out += [
                Measure("dashboard", workload, "API requests (first)", kind, costs[0]["api_requests"]),
                Measure("dashboard", workload, "API requests (max of the rest)", kind,
                        max(c["api_requests"] for c in costs[1:])),
                Measure("dashboard", workload, "ms (median)", kind,
                        statistics.median(c["took_ms"] for c in costs)),
            ]
            say(f"dashboard on {kind}: {costs}")
    return out
