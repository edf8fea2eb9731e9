"""`consumer info` / `consumer state` text: natscli's columns for a consumer info answer
(configuration, cluster, state), or the answer itself as JSON with `--json`."""

from __future__ import annotations

import click

from ...jsapi import JsonDict
from ...render import Columns, Nanos, cell, to_json
from ...session import out
from ...units import go_duration, parse_time
from .._shared import render_meta_api, since_ns

ACK_NAMES = {"none": "None", "all": "All", "explicit": "Explicit", "flow_control": "Flow Control"}
REPLAY_NAMES = {"instant": "Instant", "original": "Original"}
PRIORITY_NAMES = {"overflow": "Overflow", "pinned_client": "Pinned Client",
                  "prioritized": "Prioritized"}


def _deliver_policy(cfg: JsonDict) -> str:
    policy = cfg.get("deliver_policy")
    return {
        "all": "All", "last": "Last", "new": "New", "last_per_subject": "Last Per Subject",
        "by_start_time": f"Since {cfg.get('opt_start_time')}",
        "by_start_sequence": f"From Sequence {cfg.get('opt_start_seq')}",
    }.get(str(policy), str(policy))


def format_consumer_info(info: JsonDict, state_only: bool = False) -> str:
    """natscli's `consumer info` text for a consumer info answer."""
    cfg = info.get("config") or {}
    created = parse_time(info.get("created"))
    when = created.local() if created else ""
    kind = "State" if state_only else "Information"
    cols = Columns(f"{kind} for Consumer {info.get('stream_name')} > {info.get('name')} "
                   f"created {when}")
    if not state_only:
        cols.title("Configuration")
        cols.row_if_not_empty("Name", cfg.get("name"))
        durable = cfg.get("durable_name")
        cols.row_if("Durable Name", durable, bool(durable) and durable != cfg.get("name"))
        cols.row_if_not_empty("Description", cfg.get("description"))
        if cfg.get("deliver_subject"):
            cols.row("Delivery Subject", cfg["deliver_subject"])
        else:
            cols.row("Pull Mode", True)
        if cfg.get("filter_subject"):
            cols.row("Filter Subject", cfg["filter_subject"])
        elif cfg.get("filter_subjects"):
            cols.row("Filter Subjects", cfg["filter_subjects"])
        cols.row("Deliver Policy", _deliver_policy(cfg))
        cols.row_if("Deliver Queue Group", cfg.get("deliver_group"),
                    bool(cfg.get("deliver_group")) and bool(cfg.get("deliver_subject")))
        ack = str(cfg.get("ack_policy", "none"))
        cols.row("Ack Policy", ACK_NAMES.get(ack, ack))
        cols.row_if("Ack Wait", Nanos(int(cfg.get("ack_wait") or 0)), ack != "none")
        replay = str(cfg.get("replay_policy", "instant"))
        cols.row("Replay Policy", REPLAY_NAMES.get(replay, replay))
        max_deliver = int(cfg.get("max_deliver") or -1)
        cols.row_if("Maximum Deliveries", max_deliver, max_deliver != -1)
        cols.row_if_not_empty("Sampling Rate", cfg.get("sample_freq"))
        max_ack = int(cfg.get("max_ack_pending") or 0)
        cols.row_if("Max Ack Pending", max_ack, max_ack > 0)
        waiting = int(cfg.get("max_waiting") or 0)
        cols.row_if("Max Waiting Pulls", waiting, waiting > 0)
        heartbeat = int(cfg.get("idle_heartbeat") or 0)
        cols.row_if("Idle Heartbeat", Nanos(heartbeat), heartbeat > 0)
        cols.row_if("Flow Control", bool(cfg.get("flow_control")), bool(cfg.get("deliver_subject")))
        cols.row_if("Headers Only", True, bool(cfg.get("headers_only")))
        inactive = int(cfg.get("inactive_threshold") or 0)
        cols.row_if("Inactive Threshold", Nanos(inactive),
                    inactive > 0 and not cfg.get("deliver_subject"))
        for label, key in (("Max Pull Expire", "max_expires"), ("Max Pull Batch", "max_batch"),
                           ("Max Pull MaxBytes", "max_bytes")):
            value = int(cfg.get(key) or 0)
            cols.row_if(label, Nanos(value) if key == "max_expires" else value, value > 0)
        backoff = cfg.get("backoff") or []
        cols.row_if("Backoff", ", ".join(go_duration(int(b)) for b in backoff), bool(backoff))
        replicas = int(cfg.get("num_replicas") or 0)
        cols.row_if("Replicas", replicas, replicas > 0)
        cols.row_if("Memory Storage", True, bool(cfg.get("mem_storage")))
        if cfg.get("priority_policy") and cfg["priority_policy"] != "none":
            cols.row("Priority Policy", PRIORITY_NAMES.get(cfg["priority_policy"],
                                                           cfg["priority_policy"]))
            cols.row("Priority Groups", cfg.get("priority_groups") or [])
        metadata = {k: v for k, v in (cfg.get("metadata") or {}).items()
                    if not k.startswith("_nats")}
        if metadata:
            cols.title("Metadata")
            cols.map_strings(metadata)
    cluster = info.get("cluster") or {}
    if cluster.get("name"):
        cols.title("Cluster Information")
        cols.row("Name", cluster["name"])
        cols.row("Leader", cluster.get("leader", ""))
    cols.title("State")
    render_meta_api(cols, cfg.get("metadata"))
    cols.row("Last Delivered Message", _sequence_pair(info, "delivered", "Last delivery"))
    if cfg.get("ack_policy") != "none":
        cols.row("Acknowledgment Floor", _sequence_pair(info, "ack_floor", "Last Ack"))
        pending = int(info.get("num_ack_pending") or 0)
        if int(cfg.get("max_ack_pending") or 0) > 0:
            cols.row("Outstanding Acks",
                     f"{pending:,} out of maximum {int(cfg['max_ack_pending']):,}")
        else:
            cols.row("Outstanding Acks", pending)
        cols.row("Redelivered Messages", int(info.get("num_redelivered") or 0))
    cols.row("Unprocessed Messages", int(info.get("num_pending") or 0))
    if not cfg.get("deliver_subject"):
        waiting = int(info.get("num_waiting") or 0)
        if int(cfg.get("max_waiting") or 0) > 0:
            cols.row("Waiting Pulls", f"{waiting:,} of maximum {int(cfg['max_waiting']):,}")
        else:
            cols.row("Waiting Pulls", f"{waiting:,} of unlimited")
    elif info.get("push_bound"):
        group = cfg.get("deliver_group")
        cols.row("Active Interest", f"Active using Queue Group {group}" if group else "Active")
    else:
        cols.row("Active Interest", "No interest")
    return cols.render()


def _sequence_pair(info: JsonDict, key: str, when: str) -> str:
    """natscli's `Consumer sequence: N Stream sequence: M` line for `delivered` or
    `ack_floor`, with how long ago it last moved."""
    pair = info.get(key) or {}
    line = (f"Consumer sequence: {int(pair.get('consumer_seq') or 0):,} "
            f"Stream sequence: {int(pair.get('stream_seq') or 0):,}")
    if pair.get("last_active"):
        line += f" {when}: {cell(Nanos(since_ns(info, pair['last_active'])))} ago"
    return line


def show_consumer_info(info: JsonDict, as_json: bool, state_only: bool = False) -> None:
    if as_json:
        out(to_json(info))
    else:
        click.echo(format_consumer_info(info, state_only), nl=False)
