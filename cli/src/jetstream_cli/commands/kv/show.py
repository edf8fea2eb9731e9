"""How natscli shows a Key-Value bucket and its entries: the bucket's status (from its
stream `KV_<bucket>`), values printable or base64, operation names and entry times."""

from __future__ import annotations

import base64
import string
from datetime import datetime, timezone
from typing import Any

import click

from ...jsapi import JsonDict
from ...render import Columns, Nanos
from ...session import Session
from ...units import GoTime, ibytes, parse_time

OPS = {None: "PUT", "DEL": "DELETE", "PURGE": "PURGE"}


def printable(value: bytes) -> str:
    """natscli's Base64IfNotPrintable."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return base64.b64encode(value).decode()
    if all(ch in string.printable or ch.isprintable() for ch in text):
        return text
    return base64.b64encode(value).decode()


def format_status(info: JsonDict, bucket: str) -> str:
    """natscli's KV `showStatus` for the bucket's stream info."""
    cfg, state = info.get("config") or {}, info.get("state") or {}
    created = parse_time(info.get("created"))
    cols = Columns(f"Information for Key-Value Store Bucket {bucket} created "
                   f"{created.local() if created else ''}")
    cols.title("Configuration")
    cols.row("Bucket Name", bucket)
    cols.row("History Kept", int(cfg.get("max_msgs_per_subject") or 0))
    cols.row("Values Stored", int(state.get("messages") or 0))
    cols.row("Compressed", cfg.get("compression") == "s2")
    marker = int(cfg.get("subject_delete_marker_ttl") or 0)
    cols.row("Per-Key TTL Supported", marker > 0)
    cols.row_if("Limit Marker TTL", Nanos(marker), marker > 0)
    cols.row("Backing Store Kind", "JetStream")
    cols.row_if_not_empty("Description", cfg.get("description"))
    cols.row("Bucket Size", ibytes(int(state.get("bytes") or 0)))
    max_bytes = int(cfg.get("max_bytes", -1))
    cols.row("Maximum Bucket Size", "unlimited" if max_bytes == -1 else ibytes(max_bytes))
    max_size = int(cfg.get("max_msg_size", -1))
    cols.row("Maximum Value Size", "unlimited" if max_size == -1 else ibytes(max_size))
    max_age = int(cfg.get("max_age") or 0)
    cols.row("Maximum Age", "unlimited" if max_age <= 0 else Nanos(max_age))
    cols.row("JetStream Stream", cfg.get("name", ""))
    cols.row("Storage", {"file": "File", "memory": "Memory"}.get(cfg.get("storage", ""), ""))
    republish = cfg.get("republish")
    if republish:
        label = "Republishing Headers" if republish.get("headers_only") else "Republishing"
        cols.row(label, f"{republish.get('src')} to {republish.get('dest')}")
    metadata = {k: v for k, v in (cfg.get("metadata") or {}).items() if not k.startswith("_nats")}
    if metadata:
        cols.title("Metadata")
        cols.map_strings(metadata)
    return cols.render()


async def show_status(s: Session, bucket: str) -> None:
    click.echo(format_status(await s.js.stream_info(f"KV_{bucket}"), bucket), nl=False)


def entry_time(created: Any) -> str:
    """An entry's time as natscli prints it (local), "" when there is none. nats-py gives
    entry times as datetime (or nanoseconds); GoTime reads RFC 3339."""
    if not created:
        return ""
    if isinstance(created, datetime):
        text = created.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    elif isinstance(created, (int, float)):
        text = datetime.fromtimestamp(created / 1e9, timezone.utc).isoformat().replace("+00:00", "Z")
    else:
        text = str(created)
    return GoTime.parse(text).local()
