"""`jetstream server check connection | jetstream`: natscli's monitoring checks.

`connection` times connecting, a round trip and a request to itself; `jetstream` compares the
account's JetStream usage with its limits and, with `--replicas`, looks for streams without a
leader. Each collects a `CheckResult` and renders it (`--format nagios`, the default, `json`
or `text`); the exit status is Nagios's. A server that cannot be reached is a critical result
of the check, not an error of the command.
"""

from __future__ import annotations

import asyncio
import random
import string
import sys
import time

import click

from ...connection import connect
from ...errors import CliError
from ...jsapi import JetStreamApi
from ...session import connection_options, options_from
from ...units import NANOS_PER_SECOND, go_duration
from .._shared import DURATION
from .result import CheckResult, PerfData

FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["nagios", "json", "text"]),
                             default="nagios", help="Render the check in a specific format")


@click.command("connection")
@click.option("--connect-warn", type=DURATION, default="500ms",
              help="Warning threshold to allow for establishing connections")
@click.option("--connect-critical", type=DURATION, default="1s",
              help="Critical threshold to allow for establishing connections")
@click.option("--rtt-warn", type=DURATION, default="500ms",
              help="Warning threshold to allow for server RTT")
@click.option("--rtt-critical", type=DURATION, default="1s",
              help="Critical threshold to allow for server RTT")
@click.option("--req-warn", type=DURATION, default="500ms",
              help="Warning threshold to allow for full round trip test")
@click.option("--req-critical", type=DURATION, default="1s",
              help="Critical threshold to allow for full round trip test")
@FORMAT_OPTION
@connection_options()
@click.pass_context
def connection(ctx: click.Context, fmt: str, **thresholds: int) -> None:
    """Checks basic server connection"""
    result = CheckResult("Connection", "connections")
    asyncio.run(check_connection(ctx, result, thresholds))
    _finish(result, fmt)


@click.command("jetstream")
@click.option("--mem-warn", "memory_warn", type=int, default=75,
              help="Warning threshold for memory storage, in percent of limit")
@click.option("--mem-critical", "memory_critical", type=int, default=90,
              help="Critical threshold for memory storage, in percent of limit")
@click.option("--store-warn", "storage_warn", type=int, default=75,
              help="Warning threshold for disk storage, in percent of limit")
@click.option("--store-critical", "storage_critical", type=int, default=90,
              help="Critical threshold for disk storage, in percent of limit")
@click.option("--streams-warn", type=int, default=-1,
              help="Warning threshold for number of streams used, in percent of limit")
@click.option("--streams-critical", type=int, default=-1,
              help="Critical threshold for number of streams used, in percent of limit")
@click.option("--consumers-warn", type=int, default=-1,
              help="Warning threshold for number of consumers used, in percent of limit")
@click.option("--consumers-critical", type=int, default=-1,
              help="Critical threshold for number of consumers used, in percent of limit")
@click.option("--replicas/--no-replicas", default=True,
              help="Checks if all streams have healthy replicas")
@FORMAT_OPTION
@connection_options()
@click.pass_context
def jetstream(ctx: click.Context, fmt: str, **limits: int) -> None:
    """Check JetStream account state"""
    result = CheckResult("JetStream", "jetstream")
    asyncio.run(check_jetstream(ctx, result, limits))
    _finish(result, fmt)


def _secs(nanos: int) -> float:
    return nanos / NANOS_PER_SECOND


async def check_connection(ctx: click.Context, result: CheckResult, thresholds: dict[str, int]
                           ) -> None:
    opts = options_from(ctx)
    started = time.monotonic()
    try:
        nc = await connect(opts)
    except CliError as exc:
        result.criticals.append(f"connection failed: {exc}")
        return
    try:
        took = time.monotonic() - started
        url = nc.connected_url.geturl() if nc.connected_url else opts.servers
        result.timing("connect_time", took, _secs(thresholds["connect_warn"]),
                      _secs(thresholds["connect_critical"]), "Time taken to connect to NATS",
                      lambda limit: f"connected to {url}, connect time exceeded {limit:g}",
                      f"connected to {url} in {go_duration(int(took * 1e9))}")
        started = time.monotonic()
        await nc.flush(timeout=max(1, int(opts.timeout)))
        rtt = time.monotonic() - started
        result.timing("rtt", rtt, _secs(thresholds["rtt_warn"]), _secs(thresholds["rtt_critical"]),
                      "The round-trip-time of the connection",
                      lambda limit: f"rtt time exceeded {limit:g}",
                      f"rtt time {go_duration(int(rtt * 1e9))}")
        payload = "".join(random.choice(string.ascii_letters) for _ in range(100)).encode()
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox, max_msgs=1)
        started = time.monotonic()
        await nc.publish(inbox, payload)
        try:
            msg = await sub.next_msg(timeout=opts.timeout)
        except asyncio.TimeoutError:
            result.criticals.append(f"did not receive from {inbox}: timeout")
            return
        took = time.monotonic() - started
        if msg.data != payload:
            result.criticals.append("did not receive expected message")
        result.timing("request_time", took, _secs(thresholds["req_warn"]),
                      _secs(thresholds["req_critical"]),
                      "Time taken for a full Request-Reply operation",
                      lambda _limit: f"round trip request took {took:f}",
                      f"round trip took {took:f}s")
    finally:
        await nc.close()


async def check_jetstream(ctx: click.Context, result: CheckResult, limits: dict[str, int]
                          ) -> None:
    opts = options_from(ctx)
    try:
        nc = await connect(opts)
    except CliError as exc:
        result.criticals.append(f"connection failed: {exc}")
        return
    try:
        js = JetStreamApi(nc, opts.timeout)
        try:
            info = await js.account_info()
        except CliError as exc:
            result.criticals.append(f"JetStream not available: {exc}")
            return
        account_limits = info.get("limits") or {}
        for item, unit, used, maximum in (
                ("memory", "B", int(info.get("memory") or 0), int(account_limits.get("max_memory", -1))),
                ("storage", "B", int(info.get("storage") or 0), int(account_limits.get("max_storage", -1))),
                ("streams", "", int(info.get("streams") or 0), int(account_limits.get("max_streams", -1))),
                ("consumers", "", int(info.get("consumers") or 0), int(account_limits.get("max_consumers", -1)))):
            warn, crit = limits[f"{item}_warn"], limits[f"{item}_critical"]
            pct = int(used / maximum * 100) if maximum > 0 else 0
            result.perf.append(PerfData(item, used, unit, help=f"JetStream {item} resource usage"))
            result.perf.append(PerfData(f"{item}_pct", pct, "%", max(warn, 0), max(crit, 0),
                                        f"JetStream {item} resource usage in percent"))
            if warn != -1 and crit != -1 and warn >= crit:
                result.criticals.append(f"{item}: invalid thresholds")
            elif pct > 100:
                result.criticals.append(f"{item}: exceed server limits")
            elif warn >= 0 and crit >= 0 and pct > crit:
                result.criticals.append(f"{pct}% {item}")
            elif warn >= 0 and crit >= 0 and pct > warn:
                result.warnings.append(f"{pct}% {item}")
        if limits["replicas"]:
            streams = await js.stream_list()
            healthy = sum(1 for s in streams if int(s["config"].get("num_replicas") or 1) == 1
                          or (s.get("cluster") or {}).get("leader"))
            result.perf.append(PerfData("replicas_ok", healthy,
                                        help="Streams with healthy cluster state"))
            if healthy != len(streams):
                result.criticals.append(f"{len(streams) - healthy} unhealthy streams")
    finally:
        await nc.close()


def _finish(result: CheckResult, fmt: str) -> None:
    text = {"nagios": result.nagios, "json": result.as_json, "text": result.text}[fmt]()
    click.echo(text)
    sys.stdout.flush()
    raise click.exceptions.Exit(result.code)
