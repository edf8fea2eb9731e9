"""How natscli shows an Object Store bucket (from its stream `OBJ_<bucket>`) and an object
(size, modification time, chunks, digest, headers)."""

from __future__ import annotations

import base64

from nats.js.api import ObjectInfo

from ...jsapi import JsonDict
from ...render import Columns, Nanos
from ...units import ibytes, parse_time


def format_bucket(info: JsonDict, bucket: str) -> str:
    cfg, state = info.get("config") or {}, info.get("state") or {}
    created = parse_time(info.get("created"))
    cols = Columns(f"Information for Object Store Bucket {bucket} created "
                   f"{created.local() if created else ''}")
    cols.title("Configuration")
    cols.row("Bucket Name", bucket)
    cols.row_if_not_empty("Description", cfg.get("description"))
    cols.row("Replicas", int(cfg.get("num_replicas") or 1))
    max_age = int(cfg.get("max_age") or 0)
    cols.row("TTL", "unlimited" if max_age == 0 else Nanos(max_age))
    cols.row("Sealed", bool(cfg.get("sealed")))
    cols.row("Size", ibytes(int(state.get("bytes") or 0)))
    max_bytes = int(cfg.get("max_bytes", -1))
    cols.row("Maximum Bucket Size", "unlimited" if max_bytes == -1 else ibytes(max_bytes))
    cols.row("Storage", {"file": "File", "memory": "Memory"}.get(cfg.get("storage", ""), ""))
    cols.row("Backing Store Kind", "JetStream")
    cols.row("JetStream Stream", cfg.get("name", ""))
    return cols.render()


def format_object(info: ObjectInfo) -> str:
    cols = Columns(f"Object information for {info.bucket} > {info.name}")
    cols.row_if_not_empty("Description", info.description)
    cols.row("Size", ibytes(int(info.size or 0)))
    mtime = parse_time(info.mtime)
    cols.row("Modification Time", mtime.local() if mtime else info.mtime or "")
    cols.row("Chunks", int(info.chunks or 0))
    if info.digest:
        algorithm, _, encoded = info.digest.partition("=")
        try:
            digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()
        except ValueError:
            digest = encoded
        cols.row("Digest", f"{algorithm} {digest}")
    cols.row_if("Deleted", True, bool(info.deleted))
    if info.headers:
        cols.strings("Headers", [f"{k}: {v}" for k, v in info.headers.items()])
    return cols.render()
