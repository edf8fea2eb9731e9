"""The demo job (temporary version): an embedded server and a core NATS round trip.

Starts `EmbeddedServer`, subscribes to ``orders.>``, publishes a few orders
with nats-py, checks they all arrived, answers a request, and reports what
happened. Exits 0 on success, 1 when something did not arrive. The full
Spark pipeline replaces this module later.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence

import nats

from server import EmbeddedServer

log = logging.getLogger(__name__)


async def run(url: str, count: int) -> int:
    nc = await nats.connect(url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        received: list[dict[str, object]] = []
        done = asyncio.Event()

        async def on_order(msg) -> None:  # type: ignore[no-untyped-def]
            received.append(json.loads(msg.data))
            if len(received) == count:
                done.set()

        async def on_total(msg) -> None:  # type: ignore[no-untyped-def]
            total = sum(float(o["amount"]) for o in received)  # type: ignore[arg-type]
            await msg.respond(json.dumps({"orders": len(received), "total": total}).encode())

        await nc.subscribe("orders.>", cb=on_order)
        await nc.subscribe("orders-summary", cb=on_total)
        for i in range(count):
            order = {"id": i + 1, "region": ("eu", "us")[i % 2], "amount": 10.0 * (i + 1)}
            await nc.publish(f"orders.{order['region']}", json.dumps(order).encode())
        await asyncio.wait_for(done.wait(), 10)
        reply = await nc.request("orders-summary", b"", timeout=5)
        summary = json.loads(reply.data)
        sys.stdout.write(
            f"published {count} orders, received {len(received)}; "
            f"summary: {summary['orders']} orders, total {summary['total']:.2f}\n"
        )
        return 0 if summary["orders"] == count else 1
    finally:
        await nc.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orders_pipeline")
    parser.add_argument("--orders", type=int, default=10)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with EmbeddedServer(store_dir=None, port=0) as srv:
        sys.stdout.write(f"embedded JetStream server at {srv.url}\n")
        return asyncio.run(run(srv.url, args.orders))


if __name__ == "__main__":
    sys.exit(main())
