"""`jetstream dashboard`: serve the JetStream dashboard page for any NATS server.

    jetstream dashboard --server nats://host:4222 [--port 8080] [--host 127.0.0.1]
    jetstream dashboard --server nats://host:4222 --once    # one refresh as JSON, then exit

The page (the one the bundled server shows on its monitoring port) is served by the
standard library's HTTP server (jetstream_cli.dashboard.web); its data comes from JetStream
API and `$SYS` requests made with the user's own connection flags
(jetstream_cli.dashboard.collect), so it shows what that user may see. The event loop
runs in this thread; HTTP requests come from the server's threads and wait for the
refresh they asked for (bounded by the collector's deadline).

It connects before serving: a wrong URL or credentials fail at once with the usual
one-line error. It binds 127.0.0.1 unless `--host` says otherwise (then anyone who reaches
the port sees what this user sees: it logs a warning). `--once` prints one refresh's
data (with its cost: API requests and milliseconds) for scripts and measurements.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import click

from ..dashboard.collect import REFRESH_DEADLINE_S, Collector, Query, QueryError
from ..dashboard.web import DashboardHttpServer, is_loopback
from ..errors import CliError
from ..session import connection_options, log, options_from, out
from ..units import parse_duration


def register(cli: click.Group) -> None:
    cli.add_command(dashboard)


@click.command("dashboard")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              help="HTTP port of the page (0: any free port)")
@click.option("--host", "bind_host", default="127.0.0.1", show_default=True,
              help="Address to listen on (anyone who reaches it sees what this user sees)")
@click.option("--refresh", default="3s", show_default=True,
              help="How often the page refreshes (at least 1s)")
@click.option("--once", is_flag=True,
              help="Print one refresh's data as JSON (with its cost) and exit")
@connection_options()
@click.pass_context
def dashboard(ctx: click.Context, port: int, bind_host: str, refresh: str, once: bool) -> None:
    """Serve a live dashboard of streams, consumers and Spark queries"""
    opts = options_from(ctx)
    try:
        refresh_ms = parse_duration(refresh) // 1_000_000
    except ValueError as exc:
        raise CliError(f"--refresh: {exc}") from exc
    if refresh_ms < 1000:
        raise CliError("--refresh must be at least 1s")
    collector = Collector(opts, refresh_ms=refresh_ms)
    if once:
        out(json.dumps(asyncio.run(_once(collector)), indent=2))
        return
    asyncio.run(_serve(collector, bind_host, port))


async def _once(collector: Collector) -> dict[str, Any]:
    await collector.connect()
    try:
        return await collector.snapshot(Query())
    finally:
        await collector.close()


async def _serve(collector: Collector, host: str, port: int) -> None:
    await collector.connect()
    loop = asyncio.get_running_loop()

    def data(query_string: str) -> tuple[int, dict[str, Any]]:
        try:
            query = Query.from_query_string(query_string)
        except QueryError as exc:
            return 400, {"error": str(exc)}
        future = asyncio.run_coroutine_threadsafe(collector.snapshot(query), loop)
        try:
            return 200, future.result(REFRESH_DEADLINE_S + 5)
        except FutureTimeout:
            return 503, {"error": "the refresh did not finish in time"}

    try:
        httpd = DashboardHttpServer((host, port), data)
    except OSError as exc:
        await collector.close()
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    thread = threading.Thread(target=httpd.serve_forever, name="dashboard-http", daemon=True)
    thread.start()
    if not is_loopback(host):
        log(f"WARNING: listening on {host}: whoever reaches this port sees what "
            f"{collector.opts.user or 'this connection'} may see")
    log(f"Dashboard for {', '.join(collector.opts.server_list())} at {httpd.url} (Ctrl-C stops)")
    try:
        await asyncio.Event().wait()
    finally:
        httpd.shutdown()
        httpd.server_close()
        await collector.close()
