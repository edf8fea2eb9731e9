"""`stream info` / `stream state` text: natscli's columns for a stream info answer
(configuration, options, limits, metadata, replication, cluster, mirror and source
information, state), or the answer itself as JSON with `--json`."""

from __future__ import annotations

import click

from ...jsapi import JsonDict
from ...render import Columns, Nanos, to_json
from ...session import out
from ...units import ibytes, parse_time
from .._shared import render_meta_api

RETENTION_NAMES = {"limits": "Limits", "interest": "Interest", "workqueue": "WorkQueue"}
STORAGE_NAMES = {"file": "File", "memory": "Memory"}
DISCARD_NAMES = {"old": "Old", "new": "New"}
NEVER = 2**63 - 1


def _source_text(source: JsonDict | None) -> str:
    if not source:
        return ""
    parts = [str(source.get("name", ""))]
    if source.get("opt_start_seq"):
        parts.append(f"Start Seq: {source['opt_start_seq']:,}")
    if source.get("opt_start_time"):
        parts.append(f"Start Time: {source['opt_start_time']}")
    external = source.get("external") or {}
    if external.get("api"):
        parts.append(f"API Prefix: {external['api']}")
    if external.get("deliver"):
        parts.append(f"Delivery Prefix: {external['deliver']}")
    return ", ".join(parts)


def _show_config(cols: Columns, cfg: JsonDict) -> None:
    cols.row_if_not_empty("Description", cfg.get("description"))
    cols.row_if("Subjects", cfg.get("subjects") or [], bool(cfg.get("subjects")))
    cols.row("Replicas", int(cfg.get("num_replicas") or 1))
    cols.row_if("Sealed", True, bool(cfg.get("sealed")))
    cols.row("Storage", STORAGE_NAMES.get(str(cfg.get("storage")), str(cfg.get("storage"))))
    if cfg.get("compression") == "s2":
        cols.row("Compression", "S2 Compression")
    if cfg.get("first_seq"):
        cols.row("First Sequence", int(cfg["first_seq"]))
    placement = cfg.get("placement") or {}
    cols.row_if_not_empty("Placement Cluster", placement.get("cluster"))
    cols.row_if("Placement Tags", placement.get("tags") or [], bool(placement.get("tags")))

    cols.title("Options")
    transform = cfg.get("subject_transform") or {}
    if transform.get("dest"):
        cols.row("Subject Transform", f"{transform.get('src') or '>'} to {transform['dest']}")
    republish = cfg.get("republish")
    if republish:
        label = "Republishing Headers" if republish.get("headers_only") else "Republishing"
        cols.row(label, f"{republish.get('src')} to {republish.get('dest')}")
    cols.row("Retention", RETENTION_NAMES.get(str(cfg.get("retention")), str(cfg.get("retention"))))
    cols.row("Acknowledgments", not cfg.get("no_ack", False))
    discard = DISCARD_NAMES.get(str(cfg.get("discard")), str(cfg.get("discard")))
    cols.row("Discard Policy", "New Per Subject" if cfg.get("discard_new_per_subject") else discard)
    cols.row("Duplicate Window", Nanos(int(cfg.get("duplicate_window") or 0)))
    cols.row_if("Direct Get", True, bool(cfg.get("allow_direct")))
    cols.row_if("Mirror Direct Get", True, bool(cfg.get("mirror_direct")))
    cols.row("Allows Atomic Batch Publish", bool(cfg.get("allow_atomic")))
    cols.row("Allows Fast Batch Publish", bool(cfg.get("allow_batched")))
    cols.row("Allows Counters", bool(cfg.get("allow_msg_counter")))
    cols.row("Allows Msg Delete", not cfg.get("deny_delete", False))
    cols.row("Allows Per-Message TTL", bool(cfg.get("allow_msg_ttl")))
    cols.row("Allows Purge", not cfg.get("deny_purge", False))
    cols.row("Allows Schedules", bool(cfg.get("allow_msg_schedules")))
    marker_ttl = int(cfg.get("subject_delete_marker_ttl") or 0)
    if cfg.get("allow_msg_ttl") and marker_ttl > 0:
        cols.row("Subject Delete Markers TTL", Nanos(marker_ttl))
    cols.row("Allows Rollups", bool(cfg.get("allow_rollup_hdrs")))

    cols.title("Limits")
    max_msgs = int(cfg.get("max_msgs", -1))
    cols.row("Maximum Messages", "unlimited" if max_msgs == -1 else max_msgs)
    per_subject = int(cfg.get("max_msgs_per_subject", -1))
    cols.row("Maximum Per Subject", "unlimited" if per_subject <= 0 else per_subject)
    max_bytes = int(cfg.get("max_bytes", -1))
    cols.row("Maximum Bytes", "unlimited" if max_bytes == -1 else ibytes(max_bytes))
    max_age = int(cfg.get("max_age") or 0)
    cols.row("Maximum Age", "unlimited" if max_age <= 0 else Nanos(max_age))
    max_msg_size = int(cfg.get("max_msg_size", -1))
    cols.row("Maximum Message Size", "unlimited" if max_msg_size == -1 else ibytes(max_msg_size))
    max_consumers = int(cfg.get("max_consumers", -1))
    cols.row("Maximum Consumers", "unlimited" if max_consumers == -1 else max_consumers)
    limits = cfg.get("consumer_limits") or {}
    inactive = int(limits.get("inactive_threshold") or 0)
    cols.row_if("Consumer Inactive Threshold", Nanos(inactive), inactive > 0)
    max_ack = int(limits.get("max_ack_pending") or 0)
    cols.row_if("Consumer Max Ack Pending", max_ack, max_ack > 0)

    metadata = {k: v for k, v in (cfg.get("metadata") or {}).items() if not k.startswith("_nats")}
    if metadata:
        cols.title("Metadata")
        cols.map_strings(metadata)
    if cfg.get("mirror") or cfg.get("sources"):
        cols.title("Replication")
    if cfg.get("mirror"):
        cols.row("Mirror", _source_text(cfg["mirror"]))
    for i, source in enumerate(sorted(cfg.get("sources") or [], key=lambda s: s.get("name", ""))):
        cols.row("Sources" if i == 0 else "", _source_text(source))
    cols.line()


def _show_source_info(cols: Columns, source: JsonDict) -> None:
    cols.row("Stream Name", source.get("name", ""))
    if source.get("filter_subject"):
        cols.row("Subject Filter", source["filter_subject"])
    else:
        transforms = source.get("subject_transforms") or []
        for i, transform in enumerate(transforms):
            label = ""
            if i == 0:
                label = ("Subject Filters and Transforms" if len(transforms) > 1
                         else "Subject Filter and Transform")
            if transform.get("dest"):
                cols.row(label, f"{transform.get('src')} to {transform['dest']}")
            else:
                cols.row(label, f"{transform.get('src')} untransformed")
    cols.row("Lag", int(source.get("lag") or 0))
    active = int(source.get("active") or 0)
    cols.row("Last Seen", Nanos(active) if 0 < active < NEVER else "never")
    if source.get("error"):
        cols.row("Error", source["error"].get("description", ""))


def format_stream_info(info: JsonDict, state_only: bool = False) -> str:
    """natscli's `stream info` text for a stream info answer."""
    cfg = info.get("config") or {}
    name = cfg.get("name", "")
    created = parse_time(info.get("created"))
    created_text = created.local() if created else ""
    if state_only:
        cols = Columns(f"State for Stream {name} created {created_text}")
    else:
        cols = Columns(f"Information for Stream {name} created {created_text}")
        _show_config(cols, cfg)
    cluster = info.get("cluster") or {}
    if cluster.get("name"):
        cols.title("Cluster Information")
        cols.row("Name", cluster["name"])
        cols.row_if_not_empty("Cluster Group", cluster.get("raft_group"))
        cols.row("Leader", cluster.get("leader", ""))
        for replica in cluster.get("replicas") or []:
            health = [replica.get("name", ""), "current" if replica.get("current") else "outdated"]
            if replica.get("offline"):
                health.append("OFFLINE")
            cols.row("Replica", health)
        cols.line()
    if info.get("mirror"):
        cols.title("Mirror Information")
        _show_source_info(cols, info["mirror"])
    if info.get("sources"):
        cols.title("Source Information")
        for source in info["sources"]:
            _show_source_info(cols, source)
            cols.line()
    state = info.get("state") or {}
    cols.title("State")
    render_meta_api(cols, cfg.get("metadata"))
    cols.row("Messages", int(state.get("messages") or 0))
    cols.row("Bytes", ibytes(int(state.get("bytes") or 0)))
    lost = state.get("lost") or {}
    if lost.get("msgs"):
        cols.row("Lost Messages", f"{len(lost['msgs']):,} ({ibytes(int(lost.get('bytes') or 0))})")
    for label, seq_key, ts_key in (("First Sequence", "first_seq", "first_ts"),
                                   ("Last Sequence", "last_seq", "last_ts")):
        seq = int(state.get(seq_key) or 0)
        moment = parse_time(state.get(ts_key))
        if moment is None or moment.is_zero:
            cols.row(label, seq)
        else:
            cols.row(label, f"{seq:,} @ {moment.local()}")
    deleted = len(state.get("deleted") or []) or int(state.get("num_deleted") or 0)
    cols.row_if("Deleted Messages", deleted, deleted > 0)
    cols.row("Active Consumers", int(state.get("consumer_count") or 0))
    subjects = int(state.get("num_subjects") or 0)
    cols.row_if("Number of Subjects", subjects, subjects > 0)
    return cols.render()


def show_stream_info(info: JsonDict, as_json: bool, state_only: bool = False) -> None:
    if as_json:
        out(to_json(info))
    else:
        click.echo(format_stream_info(info, state_only), nl=False)
