"""`stream report`: one row per stream (storage, placement, consumers, messages, bytes, lost
and deleted messages, API level, replicas), sorted as the flags ask, in natscli's table or as
JSON."""

from __future__ import annotations

import click

from ...jsapi import JsonDict
from ...render import Table, to_json
from ...session import Session, connection_options, out, run
from ...units import ibytes
from .._shared import api_level, render_cluster
from .show import STORAGE_NAMES


@click.command("report")
@click.option("--subject", help="Limit the report to streams with matching subjects")
@click.option("--cluster", help="Limit report to streams within a specific cluster")
@click.option("-o", "--consumers", "by_consumers", is_flag=True,
              help="Sort by number of Consumers")
@click.option("-m", "--messages", "by_messages", is_flag=True,
              help="Sort by number of Messages")
@click.option("-n", "--name", "by_name", is_flag=True, help="Sort by stream name")
@click.option("-t", "--storage", "by_storage", is_flag=True, help="Sort by Storage type")
@click.option("-r", "--raw", is_flag=True, help="Show un-formatted numbers")
@click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output")
@connection_options()
@click.pass_context
def report(ctx: click.Context, subject: str | None, cluster: str | None, by_consumers: bool,
           by_messages: bool, by_name: bool, by_storage: bool, raw: bool,
           as_json: bool) -> None:
    """Reports on stream statistics"""
    if by_consumers:
        sort_key = "consumers"
    elif by_messages:
        sort_key = "messages"
    elif by_name:
        sort_key = "stream"
    elif by_storage:
        sort_key = "storage"
    else:
        sort_key = "bytes"
    run(ctx, lambda s: report_streams(s, subject, cluster, sort_key, raw, as_json))


async def report_streams(s: Session, subject: str | None, cluster: str | None, sort_key: str,
                         raw: bool, as_json: bool) -> None:
    if not as_json:
        out("Obtaining Stream stats\n")
    infos = await s.js.stream_list(subject)
    if cluster:
        infos = [i for i in infos if (i.get("cluster") or {}).get("name") == cluster]
    stats = sorted((stream_stat(i) for i in infos), key=lambda r: r[sort_key])
    if as_json:
        out(to_json(stats))
        return
    if not stats:
        out("No Streams defined")
        return
    out(render_stream_report(stats, raw))
    out()


def stream_stat(info: JsonDict) -> JsonDict:
    cfg, state = info.get("config") or {}, info.get("state") or {}
    lost = state.get("lost") or {}
    return {
        "stream": cfg.get("name", ""),
        "storage": STORAGE_NAMES.get(str(cfg.get("storage")), str(cfg.get("storage"))),
        "placement": cfg.get("placement"),
        "consumers": int(state.get("consumer_count") or 0),
        "messages": int(state.get("messages") or 0),
        "bytes": int(state.get("bytes") or 0),
        "lost_msgs": len(lost.get("msgs") or []),
        "lost_bytes": int(lost.get("bytes") or 0),
        "deleted": len(state.get("deleted") or []) or int(state.get("num_deleted") or 0),
        "api_level": api_level(cfg),
        "cluster": info.get("cluster"),
    }


def render_stream_report(stats: list[JsonDict], raw: bool) -> str:
    table = Table("Stream Report", ["Stream", "Storage", "Placement", "Consumers", "Messages",
                                    "Bytes", "Lost", "Deleted", "API Level", "Replicas"])
    for r in stats:
        placement = ""
        if r["placement"]:
            if r["placement"].get("cluster"):
                placement = f"cluster: {r['placement']['cluster']} "
            if r["placement"].get("tags"):
                placement += f"tags: {', '.join(r['placement']['tags'])}"
        lost = "0"
        if r["lost_msgs"]:
            lost = (f"{r['lost_msgs']} ({r['lost_bytes']})" if raw
                    else f"{r['lost_msgs']:,} ({ibytes(r['lost_bytes'])})")
        if raw:
            table.add_row(r["stream"], r["storage"], placement, r["consumers"], r["messages"],
                          r["bytes"], lost, r["deleted"], r["api_level"],
                          render_cluster(r["cluster"]))
        else:
            table.add_row(r["stream"], r["storage"], placement, f"{r['consumers']:,}",
                          f"{r['messages']:,}", ibytes(r["bytes"]), lost, f"{r['deleted']:,}",
                          r["api_level"], render_cluster(r["cluster"]))
    return table.render()
