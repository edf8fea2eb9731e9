"""`consumer report`: one row per consumer of a stream (mode, ack policy and wait, pending
acks, redeliveries, unprocessed messages, ack floor, API level, cluster) in natscli's table or
as JSON."""

from __future__ import annotations

import click

from ...jsapi import JsonDict
from ...render import Nanos, Table, cell, to_json
from ...session import Session, connection_options, out, run
from .._shared import api_level, render_cluster
from .lookup import pick
from .show import ACK_NAMES


@click.command("report")
@click.argument("stream", required=False)
@click.option("-r", "--raw", is_flag=True, help="Show un-formatted numbers")
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@connection_options()
@click.pass_context
def report(ctx: click.Context, stream: str | None, raw: bool, as_json: bool) -> None:
    """Reports on consumer statistics"""
    show_all = bool(ctx.meta.get("consumer.all"))
    run(ctx, lambda s: report_consumers(s, stream, show_all, raw, as_json))


async def report_consumers(s: Session, stream: str | None, show_all: bool, raw: bool,
                           as_json: bool) -> None:
    sname, _ = await pick(s, stream, None, show_all, want_consumer=False)
    stream_info = await s.js.stream_info(sname)
    rows = [consumer_row(c) for c in await s.js.consumer_list(sname)]
    if as_json:
        out(to_json(rows))
        return
    messages = int((stream_info.get("state") or {}).get("messages") or 0)
    count = int((stream_info.get("state") or {}).get("consumer_count") or 0)
    out(render_consumer_report(sname, count, messages, rows, raw))
    out()


def consumer_row(info: JsonDict) -> JsonDict:
    cfg = info.get("config") or {}
    return {
        "consumer": info.get("name", ""),
        "mode": "Push" if cfg.get("deliver_subject") else "Pull",
        "ack_policy": ACK_NAMES.get(str(cfg.get("ack_policy")), str(cfg.get("ack_policy"))),
        "ack_wait": int(cfg.get("ack_wait") or 0),
        "ack_pending": int(info.get("num_ack_pending") or 0),
        "redelivered": int(info.get("num_redelivered") or 0),
        "unprocessed": int(info.get("num_pending") or 0),
        "ack_floor": int((info.get("ack_floor") or {}).get("stream_seq") or 0),
        "api_level": api_level(cfg),
        "cluster": info.get("cluster"),
    }


def render_consumer_report(stream: str, count: int, messages: int, rows: list[JsonDict],
                           raw: bool) -> str:
    table = Table(f"Consumer report for {stream} with {count:,} consumers",
                  ["Consumer", "Mode", "Ack Policy", "Ack Wait", "Ack Pending", "Redelivered",
                   "Unprocessed", "Ack Floor", "API Level", "Cluster"])
    for r in rows:
        if raw:
            table.add_row(r["consumer"], r["mode"], r["ack_policy"], str(r["ack_wait"]),
                          r["ack_pending"], r["redelivered"], r["unprocessed"], r["ack_floor"],
                          r["api_level"], render_cluster(r["cluster"]))
            continue
        unprocessed = "0"
        if r["unprocessed"] > 0:
            pct = min(100, int(r["unprocessed"] / messages * 100)) if messages else 100
            unprocessed = f"{r['unprocessed']:,} / {pct}%"
        table.add_row(r["consumer"], r["mode"], r["ack_policy"], cell(Nanos(r["ack_wait"])),
                      f"{r['ack_pending']:,}", f"{r['redelivered']:,}", unprocessed,
                      f"{r['ack_floor']:,}", r["api_level"], render_cluster(r["cluster"]))
    return table.render()
