"""`jetstream account info`: natscli's account information (connection details, then
JetStream usage and limits from `$JS.API.INFO`); `--json` prints the `$JS.API.INFO` answer."""

from __future__ import annotations

import json
import time
from typing import Any

import click
from nats.errors import Error as NatsError

from ..errors import CliError
from ..jsapi import JsonDict
from ..render import Columns, Nanos, to_json
from ..session import Session, alias_group, connection_options, out, run
from ..units import ibytes


def _tier(cols: Columns, name: str, tier: JsonDict) -> None:
    limits = tier.get("limits") or {}
    cols.indent(2)
    cols.title(f"Tier: {name}")
    cols.indent(6)
    cols.title("Configuration Requirements")
    cols.row("Stream Requires Max Bytes Set", bool(limits.get("max_bytes_required")))
    ack_pending = int(limits.get("max_ack_pending") or 0)
    cols.row("Consumer Maximum Ack Pending", "Unlimited" if ack_pending <= 0 else ack_pending)
    cols.title("Stream Resource Usage Limits")
    for label, used, limit, per_stream in (
            ("Memory", "memory", "max_memory", "memory_max_stream_bytes"),
            ("Storage", "storage", "max_storage", "storage_max_stream_bytes")):
        maximum = int(limits.get(limit, -1))
        cap = "Unlimited" if maximum == -1 else ibytes(maximum)
        cols.row(label, f"{ibytes(int(tier.get(used) or 0))} of {cap}")
        stream_max = int(limits.get(per_stream) or 0)
        cols.row(f"{label} Per Stream", "Unlimited" if stream_max <= 0 else ibytes(stream_max))
    max_streams = int(limits.get("max_streams", -1))
    streams = int(tier.get("streams") or 0)
    cols.row("Streams", f"{streams:,} of Unlimited" if max_streams == -1
             else f"{streams:,} of {max_streams:,}")
    max_consumers = int(limits.get("max_consumers", -1))
    cols.row("Consumers", "Unlimited" if max_consumers == -1
             else f"Maximum {max_consumers:,} per stream")
    cols.indent(0)


async def _user_info(s: Session) -> JsonDict | None:
    try:
        msg = await s.nc.request("$SYS.REQ.USER.INFO", b"", timeout=1.0)
        answer = json.loads(msg.data)
    except (NatsError, ValueError):
        return None
    if not isinstance(answer, dict) or answer.get("error"):
        return None
    data = answer.get("data")
    return data if isinstance(data, dict) else None


@alias_group("account", {"nfo": "info"})
def account() -> None:
    """Account information and status"""


@click.command("info")
@click.option("-j", "--json", "as_json", is_flag=True,
              help="Produce JSON output (the JetStream account information)")
@connection_options()
@click.pass_context
def info(ctx: click.Context, as_json: bool) -> None:
    """Account information"""
    run(ctx, lambda s: show_account(s, as_json))


async def show_account(s: Session, as_json: bool) -> None:
    if as_json:
        out(to_json(await s.js.account_info()))
        return
    server: dict[str, Any] = getattr(s.nc, "_server_info", {}) or {}
    started = time.monotonic()
    await s.nc.flush()
    rtt = int((time.monotonic() - started) * 1e9)
    cols = Columns("Account Information")
    user = await _user_info(s)
    if user is not None:
        cols.row("User", user.get("user", ""))
        cols.row("Account", user.get("account", ""))
        expires = int(user.get("expires") or 0)
        cols.row("Expires", "never" if expires == 0 else Nanos(expires))
    cols.row("Client ID", str(server.get("client_id", "")))
    cols.row("Client IP", str(server.get("client_ip", "")))
    cols.row("RTT", Nanos(rtt))
    cols.row("Headers Supported", bool(server.get("headers")))
    cols.row("Maximum Payload", ibytes(int(server.get("max_payload") or 0)))
    url = s.nc.connected_url
    cols.row_if_not_empty("Connected Cluster", server.get("cluster"))
    cols.row("Connected URL", url.geturl() if url else "")
    cols.row("Connected Address", f"{url.hostname}:{url.port}" if url else "")
    cols.row("Connected Server ID", str(server.get("server_id", "")))
    cols.row("Connected Server Version", str(server.get("version", "")))
    name = server.get("server_name")
    cols.row_if("Connected Server Name", name, bool(name) and name != server.get("server_id"))
    cols.row("TLS Connection", "no" if not server.get("tls_required") else "yes")
    try:
        js_info = await s.js.account_info()
    except CliError as exc:
        cols.line()
        cols.line("  ", f"Could not obtain account information: {exc}")
        click.echo(cols.render(), nl=False)
        return
    domain = js_info.get("domain")
    cols.title(f"JetStream Account Information for domain {domain}" if domain
               else "JetStream Account Information")
    cols.title("Account Usage")
    cols.row_if_not_empty("Domain", domain)
    cols.row("Storage", ibytes(int(js_info.get("storage") or 0)))
    cols.row("Memory", ibytes(int(js_info.get("memory") or 0)))
    cols.row("Streams", int(js_info.get("streams") or 0))
    cols.row("Consumers", int(js_info.get("consumers") or 0))
    cols.title("Account Limits")
    cols.row("Max Message Payload", ibytes(int(server.get("max_payload") or 0)))
    tiers = js_info.get("tiers") or {}
    if tiers:
        for tier_name in sorted(tiers):
            _tier(cols, tier_name, tiers[tier_name])
    else:
        _tier(cols, "Default", js_info)
    click.echo(cols.render(), nl=False)


def register(cli: click.Group) -> None:
    account.add_command(info)
    cli.add_command(account)
