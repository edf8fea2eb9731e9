"""`jetstream server check connection | jetstream`: natscli's monitoring checks.

Each check collects OK / warning / critical messages and performance data and renders
them as natscli does: `--format nagios` (default; `OK Connection OK:connected to ... |
connect_time=0.0012s;0.5000;1.0000 ...`), `json` or `text`. The exit status is Nagios's:
0 OK, 1 warning, 2 critical, 3 unknown. A server that cannot be reached is a critical
result of the check, not an error of the command.
"""

from __future__ import annotations

import asyncio
import json
import random
import string
import sys
import time
from dataclasses import dataclass, field

import click

from ..connection import connect
from ..errors import CliError
from ..jsapi import JetStreamApi, JsonDict
from ..render import Table
from ..session import connection_options, group_with_aliases, options_from
from ..units import NANOS_PER_SECOND, go_duration
from ._shared import DURATION


@dataclass
class PerfData:
    name: str
    value: float
    unit: str = ""
    warn: float = 0.0
    crit: float = 0.0
    help: str = ""

    def __str__(self) -> str:
        fmt = "{:.4f}" if self.unit == "s" else "{:.0f}"
        name = f"'{self.name}'" if " " in self.name or "\t" in self.name else self.name
        text = f"{name}={fmt.format(self.value)}{self.unit}"
        if self.warn or self.crit:
            text += f";{fmt.format(self.warn)}" if self.warn else ";"
            if self.crit:
                text += f";{fmt.format(self.crit)}"
        return text


@dataclass
class CheckResult:
    name: str
    check: str
    oks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    criticals: list[str] = field(default_factory=list)
    perf: list[PerfData] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.criticals:
            return "CRITICAL"
        if self.warnings:
            return "WARNING"
        return "OK"

    @property
    def code(self) -> int:
        return {"OK": 0, "WARNING": 1, "CRITICAL": 2}.get(self.status, 3)

    def nagios(self) -> str:
        parts = [self.name] + [f"Crit:{c}" for c in self.criticals]
        parts += [f"Warn:{w}" for w in self.warnings] + [f"OK:{o}" for o in self.oks]
        text = f"{self.status} {' '.join(parts)}"
        if self.perf:
            text += " | " + " ".join(str(p) for p in self.perf)
        return text

    def as_json(self) -> str:
        data: JsonDict = {"status": self.status, "check_suite": self.check,
                          "check_name": self.name}
        for key, values in (("warning", self.warnings), ("critical", self.criticals),
                            ("ok", self.oks)):
            if values:
                data[key] = values
        data["perf_data"] = [{"name": p.name, "value": p.value, "warning": p.warn,
                              "critical": p.crit, "unit": p.unit, "help": p.help}
                             for p in self.perf]
        return json.dumps(data, indent=2)

    def text(self) -> str:
        lines = [f"{self.name}: {self.status}", ""]
        detail = Table("", ["Status", "Message"])
        for kind, messages in (("OK", self.oks), ("Warning", self.warnings),
                               ("Critical", self.criticals)):
            for message in messages:
                detail.add_row(kind, message)
        if detail.rows:
            lines += ["Status Detail", "", detail.render(), ""]
        metrics = Table("", ["Metric", "Value", "Unit", "Critical Threshold",
                             "Warning Threshold", "Description"])
        for p in self.perf:
            metrics.add_row(p.name, f"{p.value:g}", p.unit, f"{p.crit:g}", f"{p.warn:g}", p.help)
        if metrics.rows:
            lines += ["", "Check Metrics", "", metrics.render()]
        return "\n".join(lines)


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
        warn, crit = _secs(thresholds["connect_warn"]), _secs(thresholds["connect_critical"])
        result.perf.append(PerfData("connect_time", took, "s", warn, crit,
                                    "Time taken to connect to NATS"))
        url = nc.connected_url.geturl() if nc.connected_url else opts.servers
        if crit and took >= crit:
            result.criticals.append(f"connected to {url}, connect time exceeded {crit:g}")
        elif warn and took >= warn:
            result.warnings.append(f"connected to {url}, connect time exceeded {warn:g}")
        else:
            result.oks.append(f"connected to {url} in {go_duration(int(took * 1e9))}")
        started = time.monotonic()
        await nc.flush(timeout=max(1, int(opts.timeout)))
        rtt = time.monotonic() - started
        warn, crit = _secs(thresholds["rtt_warn"]), _secs(thresholds["rtt_critical"])
        result.perf.append(PerfData("rtt", rtt, "s", warn, crit,
                                    "The round-trip-time of the connection"))
        if crit and rtt >= crit:
            result.criticals.append(f"rtt time exceeded {crit:g}")
        elif warn and rtt >= warn:
            result.warnings.append(f"rtt time exceeded {warn:g}")
        else:
            result.oks.append(f"rtt time {go_duration(int(rtt * 1e9))}")
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
        warn, crit = _secs(thresholds["req_warn"]), _secs(thresholds["req_critical"])
        result.perf.append(PerfData("request_time", took, "s", warn, crit,
                                    "Time taken for a full Request-Reply operation"))
        if msg.data != payload:
            result.criticals.append("did not receive expected message")
        if crit and took >= crit:
            result.criticals.append(f"round trip request took {took:f}")
        elif warn and took >= warn:
            result.warnings.append(f"round trip request took {took:f}")
        else:
            result.oks.append(f"round trip took {took:f}s")
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


def register(cli: click.Group) -> None:
    @group_with_aliases(cli, "server", {})
    def server() -> None:
        """Server information"""

    @group_with_aliases(server, "check", {"conn": "connection", "js": "jetstream"})
    def check() -> None:
        """Health check for NATS servers"""

    fmt_option = click.option("--format", "fmt", type=click.Choice(["nagios", "json", "text"]),
                              default="nagios", help="Render the check in a specific format")

    @check.command("connection")
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
    @fmt_option
    @connection_options()
    @click.pass_context
    def connection(ctx: click.Context, fmt: str, **thresholds: int) -> None:
        """Checks basic server connection"""
        result = CheckResult("Connection", "connections")
        asyncio.run(check_connection(ctx, result, thresholds))
        _finish(result, fmt)

    @check.command("jetstream")
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
    @fmt_option
    @connection_options()
    @click.pass_context
    def jetstream(ctx: click.Context, fmt: str, **limits: int) -> None:
        """Check JetStream account state"""
        result = CheckResult("JetStream", "jetstream")
        asyncio.run(check_jetstream(ctx, result, limits))
        _finish(result, fmt)
